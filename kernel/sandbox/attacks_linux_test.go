//go:build linux

package sandbox

import (
	"fmt"
	"os"
)

// runAttack runs inside the sandbox as the command.
func runAttack(name string, args []string) int {
	fn, ok := attacks[name]
	if !ok {
		fmt.Println("unknown attack", name)
		return 3
	}
	fn(args)
	return 0
}

var attacks = map[string]func(args []string){}

func escaped(format string, a ...any) { fmt.Printf("ESCAPED: "+format+"\n", a...) }
func held(format string, a ...any)    { fmt.Printf("held: "+format+"\n", a...) }

func init() {
	attacks["read"] = func(args []string) {
		for _, p := range args {
			b, err := os.ReadFile(p)
			if err == nil && len(b) > 0 {
				escaped("read %s: %q", p, b)
				continue
			}
			held("read %s: %v", p, err)
		}
	}
}
