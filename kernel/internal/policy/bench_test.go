package policy

import (
	"fmt"
	"testing"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"golang.org/x/sys/unix"

	"github.com/kulehq/kule/kernel/internal/effects"
)

// commitEffects is a commit of n effects as an agent leaves them: mostly
// source edits, some new files, deletions and moves, a few manifests, CI
// files and agent settings.
func commitEffects(n int) []effects.Effect {
	es := make([]effects.Effect, n)
	for i := range es {
		dir := fmt.Sprintf("src/pkg%d/sub%d", i%97, i%7)
		switch {
		case i%20 == 0:
			es[i] = effects.Effect{Kind: effects.Modify, Path: fmt.Sprintf("svc%d/package.json", i)}
		case i%20 == 1:
			es[i] = effects.Effect{Kind: effects.Add, Path: fmt.Sprintf(".github/workflows/w%d.yml", i)}
		case i%10 == 2:
			es[i] = effects.Effect{Kind: effects.Delete, Path: fmt.Sprintf("%s/old%d.go", dir, i)}
		case i%20 == 3:
			es[i] = effects.Effect{Kind: effects.Move, Path: fmt.Sprintf("%s/new%d.go", dir, i), From: fmt.Sprintf("%s/old%d.go", dir, i)}
		case i%10 == 4:
			es[i] = effects.Effect{Kind: effects.Add, Path: fmt.Sprintf("%s/file%d.go", dir, i)}
		default:
			es[i] = effects.Effect{Kind: effects.Modify, Path: fmt.Sprintf("%s/file%d.go", dir, i)}
		}
	}
	return es
}

// BenchmarkJudge10000 judges a commit of 10,000 effects with the balanced
// policy (requests built from the effects, entities built, three verdicts),
// and, as the named peer, runs cedar-go's own Authorize on the same policy
// set and requests with the entities in a plain cedar.EntityMap, as a
// caller of cedar-go would without Kule's layering. It reports both per
// request and the ratio.
func BenchmarkJudge10000(b *testing.B) {
	const n = 10000
	es := commitEffects(n)
	e := mustLoad(b, b.TempDir(), b.TempDir(), Balanced)

	// The peer: one policy set holding the same rules, a map of entities.
	all := cedar.NewPolicySet()
	for id, p := range e.forbids {
		all.Add(id, p)
	}
	for id, p := range e.permits {
		all.Add(id, p)
	}
	reqs := FromEffects(es, Facts{})
	bld := newBuilder(gitTask, deletions(reqs))
	type peerReq struct {
		req  types.Request
		ents types.EntityMap
	}
	peer := make([]peerReq, len(reqs))
	for i, r := range reqs {
		cr, g, _ := bld.request(r)
		peer[i] = peerReq{cr, types.EntityMap{g.principal.UID: g.principal, g.resource.UID: g.resource}}
	}

	var kule, cedarOnly, kuleCPU time.Duration
	var asks int
	b.ResetTimer()
	for range b.N {
		t0, c0 := time.Now(), cpuTime()
		r := e.Judge(gitTask, FromEffects(es, Facts{}))
		kule += time.Since(t0)
		kuleCPU += cpuTime() - c0
		asks = len(r.Of(Ask))

		t0 = time.Now()
		for _, p := range peer {
			cedar.Authorize(all, p.ents, p.req)
		}
		cedarOnly += time.Since(t0)
	}
	b.StopTimer()
	perKule := float64(kule.Nanoseconds()) / float64(b.N*n)
	perPeer := float64(cedarOnly.Nanoseconds()) / float64(b.N*n)
	b.ReportMetric(perKule, "ns/request")
	b.ReportMetric(float64(kule.Milliseconds())/float64(b.N), "ms/commit")
	b.ReportMetric(float64(kuleCPU.Milliseconds())/float64(b.N), "cpu-ms/commit")
	b.ReportMetric(perPeer, "cedar-authorize-ns/request")
	b.ReportMetric(perKule/perPeer, "ratio")
	if asks == 0 {
		b.Fatal("the commit should have asked about its manifests and CI files")
	}
}

// cpuTime is the CPU time this process used so far (every thread, the
// garbage collector's too): on a machine shared with other work it says
// more than the wall clock.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
