package admin

import (
	"cmp"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/vocab"
)

// Traffic is the body of GET /api/traffic, the console's chart: the decisions of the
// selected window counted per time bucket and final action, and the tools and rules
// seen most. It is computed from the newest audit.MaxLimit records that match the
// filter; Truncated says the window held more.
type Traffic struct {
	Start     string                 `json:"start"`          // TSLayout: the first bucket's start
	BucketSec int                    `json:"bucket_seconds"` // width of a bucket: a whole number of minutes
	Actions   map[vocab.Action][]int `json:"actions"`        // per action, one count per bucket, oldest first
	Tools     []Top                  `json:"tools"`          // most called tools, at most TopN
	Rules     []Top                  `json:"rules"`          // rule ids and acting policies seen most, at most TopN
	Records   int                    `json:"records"`        // records counted
	Truncated bool                   `json:"truncated"`      // the window held more than audit.MaxLimit records
}

// Top is one name and how many records named it.
type Top struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// Chart limits.
const (
	TopN       = 8   // names in each top list
	MaxBuckets = 120 // bars in the chart; wider windows get wider buckets
	allTime    = time.Hour
)

// traffic counts recs (newest first) over [from, to). With a zero from, the window
// starts at the oldest record, and spans at least an hour.
func traffic(recs []audit.Record, from, to time.Time) Traffic {
	if from.IsZero() {
		from = to.Add(-allTime)
		if n := len(recs); n > 0 {
			if t, err := time.Parse(audit.TSLayout, recs[n-1].TS); err == nil && t.Before(from) {
				from = t
			}
		}
	}
	width := time.Minute
	if span := to.Sub(from); span > MaxBuckets*time.Minute {
		width = (span/MaxBuckets + time.Minute - 1).Truncate(time.Minute)
	}
	from = from.Truncate(width)
	n := int(to.Sub(from)/width) + 1
	tr := Traffic{Start: from.UTC().Format(audit.TSLayout), BucketSec: int(width / time.Second),
		Actions: map[vocab.Action][]int{}, Records: len(recs)}
	for _, a := range vocab.Actions {
		tr.Actions[a] = make([]int, n)
	}
	tools, rules := map[string]int{}, map[string]int{}
	for i := range recs {
		r := &recs[i]
		t, err := time.Parse(audit.TSLayout, r.TS)
		if err != nil || t.Before(from) {
			continue
		}
		b := min(int(t.Sub(from)/width), n-1)
		a := r.ActionTaken
		if _, ok := tr.Actions[a]; !ok {
			a = vocab.Pass // off the ladder counts as pass, as Counts does
		}
		tr.Actions[a][b]++
		if r.Tool != "" {
			tools[r.Tool]++
		}
		seen := map[string]bool{}
		for _, list := range [][]string{r.InputRuleIDs, r.RuleIDs, r.Policies} {
			for _, id := range list {
				if !seen[id] {
					seen[id] = true
					rules[id]++
				}
			}
		}
	}
	tr.Tools, tr.Rules = top(tools), top(rules)
	return tr
}

// top returns the TopN names with the highest counts, ties by name.
func top(m map[string]int) []Top {
	out := make([]Top, 0, len(m))
	for k, v := range m {
		out = append(out, Top{k, v})
	}
	slices.SortFunc(out, func(a, b Top) int { return cmp.Or(b.N-a.N, strings.Compare(a.Name, b.Name)) })
	return out[:min(len(out), TopN)]
}

func trafficHandler(st audit.Store, now func() time.Time, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f, err := audit.ParseFilter(q.Get("status"), q.Get("tool"), q.Get("since"), "", now())
		if err == nil {
			err = f.SetCaller(q.Get("caller"), "")
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": strings.TrimPrefix(err.Error(), "bad filter: ")})
			return
		}
		f.Method = q.Get("method")
		f.ShadowDiffers = q.Get("shadow") == "differs"
		f.Limit = audit.MaxLimit
		recs, err := st.Query(r.Context(), f)
		if err != nil {
			log.Error("admin: audit query failed", "err", err)
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "audit store query failed; see the gateway log"})
			return
		}
		tr := traffic(recs, f.Since, now())
		tr.Truncated = len(recs) == audit.MaxLimit
		writeJSON(w, http.StatusOK, tr)
	})
}
