package host

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dop251/goja"
)

// prelude runs before the extension's script, with the Go functions it is
// given, and builds the `kule` object of plain JavaScript objects. It also
// keeps JSON and Promise as they were, for the host's own use.
const prelude = `(function (native, settings, meta) {
  'use strict';
  const freeze = Object.freeze;
  const bridge = native.bridge;
  const commands = native.registerCommand, notes = native.registerNotes, log = native.log;
  const call = (method) => function () { return bridge(method, JSON.stringify(Array.prototype.slice.call(arguments))); };
  const kule = {
    id: meta.id,
    version: meta.version,
    commands: freeze({
      register(id, fn) {
        if (typeof id !== 'string' || typeof fn !== 'function') throw new TypeError('kule.commands.register(id, fn)');
        commands(id, fn);
      },
    }),
    review: freeze({
      onNotes(fn) {
        if (typeof fn !== 'function') throw new TypeError('kule.review.onNotes(fn)');
        notes(fn);
      },
      effects: call('review.effects'),
    }),
    tasks: freeze({ list: call('tasks.list'), get: call('tasks.get') }),
    files: freeze({ read: call('files.read') }),
    notify: call('notify'),
    settings: freeze({
      get(id) { return Object.prototype.hasOwnProperty.call(settings, id) ? settings[id] : undefined; },
    }),
    // call reaches any bridge method by name; the kernel refuses what the
    // extension was not granted (and everything it does not offer).
    call(method) { return bridge(String(method), JSON.stringify(Array.prototype.slice.call(arguments, 1))); },
  };
  const line = (level) => function () {
    log(level, Array.prototype.map.call(arguments, (a) => typeof a === 'string' ? a : JSON.stringify(a)).join(' '));
  };
  globalThis.kule = freeze(kule);
  globalThis.console = freeze({ log: line('info'), info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug') });
  // Timers are the host's own: each callback runs within the runtime's
  // time limit, with the promise reactions it starts.
  const setTimer = native.setTimer, clearTimer = native.clearTimer;
  const timer = (repeat, immediate) => function (fn) {
    if (typeof fn !== 'function') throw new TypeError('a timer needs a function');
    const args = Array.prototype.slice.call(arguments, immediate ? 1 : 2);
    return setTimer(() => fn.apply(undefined, args), immediate ? 0 : Number(arguments[1]) || 0, repeat);
  };
  const clear = (id) => { clearTimer(Number(id) || 0); };
  globalThis.setTimeout = timer(false, false);
  globalThis.setInterval = timer(true, false);
  globalThis.setImmediate = timer(false, true);
  globalThis.clearTimeout = globalThis.clearInterval = globalThis.clearImmediate = clear;
  const P = Promise, parse = JSON.parse, stringify = JSON.stringify;
  return {
    parse: (s) => parse(s),
    stringify: (v) => stringify(v),
    settle: (v, ok, fail) => { P.resolve(v).then(ok, fail); },
  };
})`

// setup prepares a fresh runtime on its loop: limits, no require, the SDK.
func (r *rt) setup(vm *goja.Runtime) error {
	r.vm = vm
	vm.SetMaxCallStackSize(MaxCallStack)
	g := vm.GlobalObject()
	for _, name := range []string{"require", "module", "exports", "process", "fetch", "XMLHttpRequest", "WebSocket", "importScripts"} {
		if err := g.Delete(name); err != nil {
			return err
		}
	}
	native := vm.NewObject()
	set := func(name string, fn func(goja.FunctionCall) goja.Value) error { return native.Set(name, fn) }
	if err := set("bridge", r.bridgeCall); err != nil {
		return err
	}
	if err := set("registerCommand", func(c goja.FunctionCall) goja.Value {
		fn, _ := goja.AssertFunction(c.Argument(1))
		r.commands[c.Argument(0).String()] = fn
		return goja.Undefined()
	}); err != nil {
		return err
	}
	if err := set("registerNotes", func(c goja.FunctionCall) goja.Value {
		r.notes, _ = goja.AssertFunction(c.Argument(0))
		return goja.Undefined()
	}); err != nil {
		return err
	}
	if err := set("setTimer", r.setTimer); err != nil {
		return err
	}
	if err := set("clearTimer", func(c goja.FunctionCall) goja.Value {
		r.clearTimer(c.Argument(0).ToInteger())
		return goja.Undefined()
	}); err != nil {
		return err
	}
	if err := set("log", func(c goja.FunctionCall) goja.Value {
		msg := c.Argument(1).String()
		switch c.Argument(0).String() {
		case "warn":
			r.log.Warn(msg)
		case "error":
			r.log.Error(msg)
		case "debug":
			r.log.Debug(msg)
		default:
			r.log.Info(msg)
		}
		return goja.Undefined()
	}); err != nil {
		return err
	}
	settings := vm.NewObject()
	for k, v := range r.settings {
		b, _ := json.Marshal(v)
		pv, err := vm.RunString("(" + string(b) + ")")
		if err != nil {
			return err
		}
		if err := settings.Set(k, pv); err != nil {
			return err
		}
	}
	meta := vm.NewObject()
	_ = meta.Set("id", r.id)
	_ = meta.Set("version", r.version)
	fv, err := vm.RunScript("kule-prelude.js", prelude)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	fn, _ := goja.AssertFunction(fv)
	res, err := fn(goja.Undefined(), native, settings, meta)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	o := res.ToObject(vm)
	r.parse, _ = goja.AssertFunction(o.Get("parse"))
	r.stringfy, _ = goja.AssertFunction(o.Get("stringify"))
	r.settle, _ = goja.AssertFunction(o.Get("settle"))
	return nil
}

// bridgeCall is the one way out of the runtime: (method, JSON arguments)
// goes to the kernel on a goroutine of its own, and the promise it returns
// settles on the loop with the kernel's answer. A refusal rejects it with a
// plain Error carrying the kernel's words, never a Go value.
func (r *rt) bridgeCall(c goja.FunctionCall) goja.Value {
	vm := r.vm
	method := c.Argument(0).String()
	args := json.RawMessage(c.Argument(1).String())
	p, resolve, reject := vm.NewPromise()
	r.mu.Lock()
	bridge, ctx := r.bridge, r.ctx
	r.mu.Unlock()
	if bridge == nil {
		_ = reject(r.newError("no call is running"))
		return vm.ToValue(p)
	}
	go func() {
		res, err := bridge(ctx, method, args)
		r.loop.RunOnLoop(func(vm *goja.Runtime) {
			// The reactions to the answer run now, perhaps after the call
			// that asked ended, so they are bounded like a timer.
			r.bounded("an answer's reactions", func() error {
				if err != nil {
					return reject(r.newError(err.Error()))
				}
				if len(res) == 0 {
					res = json.RawMessage("null")
				}
				v, perr := r.parse(goja.Undefined(), vm.ToValue(string(res)))
				if perr != nil {
					return reject(r.newError("kule answered what is not JSON"))
				}
				return resolve(v)
			})
		})
	}()
	return vm.ToValue(p)
}

// setTimer is setTimeout, setInterval and setImmediate: (fn, ms, repeat)
// gives back the timer's number.
func (r *rt) setTimer(c goja.FunctionCall) goja.Value {
	fn, ok := goja.AssertFunction(c.Argument(0))
	if !ok {
		panic(r.vm.NewTypeError("a timer needs a function"))
	}
	ms := c.Argument(1).ToInteger()
	if ms < 0 {
		ms = 0
	}
	repeat := c.Argument(2).ToBoolean()
	r.nextTimer++
	id := r.nextTimer
	// fn is called from Go, outside any script, so the reactions it starts
	// run inside the bound too. The loop clears an interval only when it
	// next gets to its own queue, after ticks already queued have run;
	// cleared is set on the loop the moment the timer is cleared, so no
	// queued tick runs after that.
	cleared := false
	run := func(*goja.Runtime) {
		if cleared {
			return
		}
		if !repeat {
			delete(r.timers, id)
		}
		if !r.bounded("a timer", func() error { _, err := fn(goja.Undefined()); return err }) {
			r.clearTimer(id) // stopped at its limit: it does not come back
		}
	}
	d := time.Duration(ms) * time.Millisecond
	if repeat {
		if d <= 0 {
			d = time.Millisecond
		}
		iv := r.loop.SetInterval(run, d)
		r.timers[id] = func() { cleared = true; r.loop.ClearInterval(iv) }
	} else {
		t := r.loop.SetTimeout(run, d)
		r.timers[id] = func() { cleared = true; r.loop.ClearTimeout(t) }
	}
	return r.vm.ToValue(id)
}

func (r *rt) clearTimer(id int64) {
	if stop, ok := r.timers[id]; ok {
		delete(r.timers, id)
		stop()
	}
}

func (r *rt) newError(msg string) goja.Value {
	ctor, _ := goja.AssertConstructor(r.vm.Get("Error"))
	if ctor == nil {
		return r.vm.ToValue(msg)
	}
	o, err := ctor(nil, r.vm.ToValue(msg))
	if err != nil {
		return r.vm.ToValue(msg)
	}
	return o
}
