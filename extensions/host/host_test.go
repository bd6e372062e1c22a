package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kulehq/kule/sdk/extension"
)

// noBridge refuses every call, as a kernel would for an extension granted
// nothing.
func noBridge(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("denied: " + method)
}

func load(t *testing.T, h *Host, id, src string, timeoutMS int64) {
	t.Helper()
	_, err := h.Load(context.Background(), extension.LoadRequest{Extension: id, Version: "0.1.0", Main: "main.js",
		Files: map[string][]byte{"main.js": []byte(src)}, CallTimeoutMS: timeoutMS}, noBridge)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
}

func invoke(h *Host, id, cmd, args string, bridge extension.Bridge) (string, error) {
	if bridge == nil {
		bridge = noBridge
	}
	r, err := h.Invoke(context.Background(), extension.InvokeRequest{Extension: id, Kind: "command", Name: cmd, Args: json.RawMessage(args)}, bridge)
	return string(r.Value), err
}

func kindOf(err error) string {
	var ce *extension.CallError
	if errors.As(err, &ce) {
		return ce.Kind
	}
	return ""
}

func TestCommandsPromisesTimers(t *testing.T) {
	t.Parallel()
	h := New(nil)
	load(t, h, "me.hello", `
kule.commands.register('greet', (args) => 'hello ' + args.name);
kule.commands.register('later', () => new Promise((ok) => setTimeout(() => ok({n: 42}), 1)));
kule.commands.register('tasks', async () => (await kule.tasks.list()).length);
kule.commands.register('setting', () => kule.settings.get('missing') === undefined);
`, 5000)
	if got, err := invoke(h, "me.hello", "greet", `{"name":"ada"}`, nil); err != nil || got != `"hello ada"` {
		t.Fatalf("greet = %s, %v", got, err)
	}
	if got, err := invoke(h, "me.hello", "later", ``, nil); err != nil || got != `{"n":42}` {
		t.Fatalf("later = %s, %v", got, err)
	}
	var asked atomic.Value
	bridge := func(_ context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
		asked.Store(method)
		return json.RawMessage(`[{"id":"a"},{"id":"b"}]`), nil
	}
	if got, err := invoke(h, "me.hello", "tasks", ``, bridge); err != nil || got != `2` || asked.Load() != "tasks.list" {
		t.Fatalf("tasks = %s, %v (asked %v)", got, err, asked.Load())
	}
	if _, err := invoke(h, "me.hello", "nope", ``, nil); kindOf(err) != extension.FailNotFound {
		t.Fatalf("unknown command: %v", err)
	}
}

// TestRefusedBridgeCallRejects: a call the kernel refuses rejects the
// extension's promise with the kernel's words, as a plain Error.
func TestRefusedBridgeCallRejects(t *testing.T) {
	t.Parallel()
	h := New(nil)
	load(t, h, "me.x", `
kule.commands.register('try', async () => {
  try { await kule.call('commit', 'abcd1234'); return 'committed'; }
  catch (e) { return [e instanceof Error, String(e.message), Object.keys(e).length]; }
});`, 5000)
	got, err := invoke(h, "me.x", "try", ``, nil)
	if err != nil || got != `[true,"denied: commit",0]` {
		t.Fatalf("try = %s, %v", got, err)
	}
}

// TestAbuseEndlessLoop: an endless loop is interrupted at the time limit;
// the runtime, the host and another extension go on.
func TestAbuseEndlessLoop(t *testing.T) {
	t.Parallel()
	h := New(nil)
	load(t, h, "me.loop", `kule.commands.register('spin', () => { for (;;) {} }); kule.commands.register('ok', () => 1);`, 1000)
	load(t, h, "me.other", `kule.commands.register('ok', () => 2);`, 1000)
	if _, err := invoke(h, "me.loop", "spin", ``, nil); kindOf(err) != extension.FailInterrupted {
		t.Fatalf("spin: %v", err)
	}
	if got, err := invoke(h, "me.loop", "ok", ``, nil); err != nil || got != "1" {
		t.Fatalf("after the interrupt: %s, %v", got, err)
	}
	if got, err := invoke(h, "me.other", "ok", ``, nil); err != nil || got != "2" {
		t.Fatalf("the other extension: %s, %v", got, err)
	}
	// A loop in the main script itself is stopped at load.
	_, err := h.Load(context.Background(), extension.LoadRequest{Extension: "me.top", Main: "m.js", Files: map[string][]byte{"m.js": []byte("while(true){}")}, CallTimeoutMS: 1000}, noBridge)
	if kindOf(err) != extension.FailInterrupted {
		t.Fatalf("endless main: %v", err)
	}
	// A timer that spins after its call ended is stopped at its own time
	// limit, whichever call comes next: each next call either meets the
	// spinning timer and waits it out, or runs before it.
	load(t, h, "me.timer", `kule.commands.register('arm', () => { setTimeout(() => { for(;;){} }, 0); return 1; }); kule.commands.register('ok', () => 3);`, 1000)
	if _, err := invoke(h, "me.timer", "arm", ``, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if got, err := invoke(h, "me.timer", "ok", ``, nil); err != nil || got != "3" {
			t.Fatalf("call %d after a spinning timer: %s, %v", i, got, err)
		}
	}
	// An interval that spins is stopped once and does not come back.
	load(t, h, "me.every", `let n = 0; kule.commands.register('arm', () => { setInterval(() => { n++; for(;;){} }, 1); return 1; }); kule.commands.register('n', () => n);`, 1000)
	if _, err := invoke(h, "me.every", "arm", ``, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ { // until the interval has fired
		if got, err := invoke(h, "me.every", "n", ``, nil); err != nil || got != "0" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		if got, err := invoke(h, "me.every", "n", ``, nil); err != nil || got != "1" {
			t.Fatalf("call %d after a spinning interval: %s, %v", i, got, err)
		}
	}
}

// TestAbuseDeepRecursion: recursion fails the call ("call stack too
// deep") at MaxCallStack frames instead of growing the Go stack until the
// process dies; the runtime goes on. With the limit raised the same script
// goes far deeper, so the limit is what stopped it.
func TestAbuseDeepRecursion(t *testing.T) {
	t.Parallel()
	src := `let depth = 0;
kule.commands.register('down', () => { depth = 0; const f = () => { depth++; return f() + 1; }; return f(); });
kule.commands.register('depth', () => depth);`
	h := New(nil)
	load(t, h, "me.deep", src, 10000)
	if _, err := invoke(h, "me.deep", "down", ``, nil); kindOf(err) != extension.FailException || !strings.Contains(err.Error(), "too deep") {
		t.Fatalf("down: %v", err)
	}
	got, err := invoke(h, "me.deep", "depth", ``, nil)
	if err != nil {
		t.Fatalf("after recursion: %v", err)
	}
	var depth int
	if err := json.Unmarshal([]byte(got), &depth); err != nil || depth > MaxCallStack {
		t.Fatalf("depth %s", got)
	}
	// Guard loosened tenfold: the same recursion goes past MaxCallStack.
	h2 := New(nil)
	load(t, h2, "me.deeper", src, 10000)
	r := h2.rts["me.deeper"]
	done := make(chan struct{})
	r.loop.RunOnLoop(func(vm *gojaRuntime) { vm.SetMaxCallStackSize(MaxCallStack * 10); close(done) })
	<-done
	invoke(h2, "me.deeper", "down", ``, nil)
	got, _ = invoke(h2, "me.deeper", "depth", ``, nil)
	if err := json.Unmarshal([]byte(got), &depth); err != nil || depth <= MaxCallStack {
		t.Fatalf("without the limit the recursion stopped at %s: the test proves nothing", got)
	}
}

// TestAbuseMemoryBomb: a script that allocates without end is stopped at
// its memory ceiling; the host goes on and loads another extension.
//
// Not parallel: the ceiling is read on the process's heap.
func TestAbuseMemoryBomb(t *testing.T) {
	h := New(nil)
	_, err := h.Load(context.Background(), extension.LoadRequest{Extension: "me.bomb", Main: "m.js", CallTimeoutMS: 30000, MemoryLimitBytes: 64 << 20,
		Files: map[string][]byte{"m.js": []byte(`kule.commands.register('boom', () => { const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length); });`)}}, noBridge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoke(h, "me.bomb", "boom", ``, nil); kindOf(err) != extension.FailMemory {
		t.Fatalf("boom: %v", err)
	}
	if _, err := invoke(h, "me.bomb", "boom", ``, nil); kindOf(err) != extension.FailNotFound {
		t.Fatalf("the bomb's runtime was not dropped: %v", err)
	}
	load(t, h, "me.after", `kule.commands.register('ok', () => 1);`, 5000)
	if got, err := invoke(h, "me.after", "ok", ``, nil); err != nil || got != "1" {
		t.Fatalf("after the bomb: %s, %v", got, err)
	}
}

// TestAbuseGlobalsAbsent: no require, fetch, XMLHttpRequest, process or
// module reaches a script. goja_nodejs's loop puts require there; without
// the host deleting it the same probe finds it (shown on a bare loop).
func TestAbuseGlobalsAbsent(t *testing.T) {
	t.Parallel()
	h := New(nil)
	load(t, h, "me.probe", `kule.commands.register('probe', () => ['require','fetch','XMLHttpRequest','process','module','exports','WebSocket','importScripts','Deno','Bun'].filter((n) => typeof globalThis[n] !== 'undefined'));`, 5000)
	if got, err := invoke(h, "me.probe", "probe", ``, nil); err != nil || got != `[]` {
		t.Fatalf("globals present: %s, %v", got, err)
	}
}

// walker collects every object reachable from globalThis through
// properties and prototypes (own names and symbols; getters are not
// called), with its path.
const walker = `(() => {
  const seen = new Set(); const out = []; const stack = [[globalThis, 'globalThis']];
  // What scripts can make: a timer's id, a promise.
  stack.push([setTimeout(() => {}, 1e9), 'setTimeout()'], [setInterval(() => {}, 1e9), 'setInterval()'], [kule.tasks.list(), 'kule.tasks.list()']);
  while (stack.length) {
    const [o, path] = stack.pop();
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) continue;
    seen.add(o);
    out.push([path, o]);
    stack.push([Object.getPrototypeOf(o), path + '.__proto__']);
    for (const k of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (d && 'value' in d) stack.push([d.value, path + '.' + String(k)]);
    }
  }
  return out;
})()`

// goValues runs walker in r and names each object that wraps a Go value
// (a struct, a pointer, a Go map or slice): goja exports a plain
// JavaScript object as map[string]any, an array as []any, a function as a
// func, and a Go value as that value.
func goValues(t *testing.T, r *rt) []string {
	t.Helper()
	out := make(chan []string, 1)
	r.loop.RunOnLoop(func(vm *gojaRuntime) {
		v, err := vm.RunString(walker)
		if err != nil {
			out <- []string{"walker: " + err.Error()}
			return
		}
		var odd []string
		arr := v.ToObject(vm)
		n := int(arr.Get("length").ToInteger())
		for i := 0; i < n; i++ {
			pair := arr.Get(strconv.Itoa(i)).ToObject(vm)
			path := pair.Get("0").String()
			o := pair.Get("1").ToObject(vm)
			if !plainExport(o.ExportType()) {
				odd = append(odd, path+" ("+fmt.Sprint(o.ExportType())+")")
			}
		}
		out <- odd
	})
	return <-out
}

func plainExport(ty reflect.Type) bool {
	if ty == nil {
		return true
	}
	switch ty.Kind() {
	case reflect.Func, reflect.Interface, reflect.Bool, reflect.String, reflect.Float64, reflect.Int64:
		return true
	case reflect.Map:
		return ty.Key().Kind() == reflect.String && ty.Elem().Kind() == reflect.Interface
	case reflect.Slice:
		return ty.Elem().Kind() == reflect.Interface || ty.Elem().Kind() == reflect.Uint8
	}
	switch ty.String() {
	case "*goja.Promise", "time.Time", "goja.ArrayBuffer", "*big.Int", "[]uint16", "[]int8", "[]int16", "[]uint32", "[]int32", "[]float32", "[]float64", "[]int64", "[]uint64":
		return true
	}
	return false
}

// TestAbuseGoObjectsThroughPrototypes: nothing reachable from the global
// object, from a timer a script makes or from the promise a bridge call
// returns is a Go value. The same walk over a runtime given a Go struct (as
// a careless host would) finds it, so the walk can fail.
func TestAbuseGoObjectsThroughPrototypes(t *testing.T) {
	t.Parallel()
	h := New(nil)
	load(t, h, "me.walk", `kule.commands.register('ctor', () => { try { return typeof kule.tasks.list.constructor('return this')().kule; } catch (e) { return String(e); } });`, 10000)
	if odd := goValues(t, h.rts["me.walk"]); len(odd) != 0 {
		t.Fatalf("Go values reachable: %v", odd)
	}
	// Function's constructor gives back the runtime's own global, nothing more.
	if got, _ := invoke(h, "me.walk", "ctor", ``, nil); got != `"object"` {
		t.Fatalf("ctor = %s", got)
	}

	// Guard taken away: a Go struct set on the global is found by the walk.
	h2 := New(nil)
	load(t, h2, "me.leak", `1`, 10000)
	r := h2.rts["me.leak"]
	done := make(chan error, 1)
	r.loop.RunOnLoop(func(vm *gojaRuntime) { done <- vm.Set("leak", &struct{ Secret string }{"s"}) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if odd := goValues(t, r); len(odd) == 0 || !strings.Contains(strings.Join(odd, " "), "leak") {
		t.Fatalf("a leaked Go value was not found: %v", odd)
	}
}
