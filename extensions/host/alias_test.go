package host

import "github.com/dop251/goja"

type gojaRuntime = goja.Runtime
