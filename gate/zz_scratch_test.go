package gate

import (
	"context"
	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/ctxapi"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func BenchmarkScratch(b *testing.B) {
	sets := map[string]map[string]string{
		"empty":     {},
		"redact":    {"10-redact-email.js": idiomaticPolicies["10-redact-email.js"]},
		"force":     {"20-block-force-delete.js": idiomaticPolicies["20-block-force-delete.js"]},
		"strip":     {"30-strip-co-authored-by.js": idiomaticPolicies["30-strip-co-authored-by.js"]},
		"untrusted": {"40-untrusted-readonly.js": idiomaticPolicies["40-untrusted-readonly.js"]},
		"noop-pre":  {"x.js": `if (ctx.phase !== "pre") return; var x = Math.abs(1);`},
		"noop-pre3": {"x.js": `if (ctx.phase !== "pre") return; var x = Math.abs(1);`, "y.js": `if (ctx.phase !== "pre") return; var x = Math.abs(1);`, "z.js": `if (ctx.phase !== "pre") return; var x = Math.abs(1);`},
		"all":       idiomaticPolicies,
	}
	for _, name := range []string{"empty", "noop-pre", "noop-pre3", "redact", "force", "strip", "untrusted", "all"} {
		b.Run(name, func(b *testing.B) {
			g := loadGate(b, sets[name], func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
			b.ReportAllocs()
			cpu0 := processCPU()
			defer func() { b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				ctx := context.Background()
				preCall, postCall := workloadCalls()
				set := g.Current()
				pre := set.Run(ctx, preCall)
				if pre.Changed {
					postCall.Params = pre.Params
				}
				if set.Acts(ctxapi.PhasePost) {
					set.Run(ctx, postCall)
				}
			}
		})
	}
}

func TestScratchHeap(t *testing.T) {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	g := loadGate(t, idiomaticPolicies, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	for i := 0; i < 10; i++ {
		runWorkload(g)
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	t.Logf("heap before %d after %d (+%d) objects %d", before, m.HeapAlloc, m.HeapAlloc-before, m.HeapObjects)
	t.Logf("idle runtimes %d", len(g.pool.idle))
}

func TestScratchHeapProfile(t *testing.T) {
	runtime.MemProfileRate = 1
	g := loadGate(t, idiomaticPolicies, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	for i := 0; i < 10; i++ {
		runWorkload(g)
	}
	runtime.GC()
	f, _ := os.Create("/tmp/heap.out")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
}

func TestScratchRuntimeSize(t *testing.T) {
	var m runtime.MemStats
	measure := func(name string, f func() any) {
		runtime.GC()
		runtime.ReadMemStats(&m)
		before := m.HeapAlloc
		x := f()
		runtime.GC()
		runtime.ReadMemStats(&m)
		t.Logf("%s: %d KB", name, (int64(m.HeapAlloc)-int64(before))/1024)
		runtime.KeepAlive(x)
	}
	measure("goja.New", func() any { return goja.New() })
	measure("goja.New+freeze all", func() any {
		rt := goja.New()
		rt.RunString(`(function(){var seen=new Set(),w=[globalThis];while(w.length){var o=w.pop();if((typeof o!=='object'&&typeof o!=='function')||o===null||seen.has(o))continue;seen.add(o);Object.freeze(o);w.push(Object.getPrototypeOf(o));Reflect.ownKeys(o).forEach(function(k){var d=Object.getOwnPropertyDescriptor(o,k);if('value' in d)w.push(d.value);else{w.push(d.get);w.push(d.set)}})}})()`)
		return rt
	})
	g := loadGate(t, idiomaticPolicies, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	measure("newVM", func() any {
		v, err := newVM(g.pool)
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
}
