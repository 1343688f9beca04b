package admin

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// GateStatus is what the metrics read from the policy set: the gate package's Status,
// copied so this package does not depend on the gate.
type GateStatus struct {
	Generation uint64
	LastError  string // "" when the last reload succeeded
	LoadedAt   time.Time
}

// MaxToolLabels caps distinct tool label values. Only names the upstream listed
// become labels (a record's Listed); any other name, and names past the cap, count as
// OtherTool, so a client calling made-up tool names cannot grow the registry.
const MaxToolLabels = 256

// OtherTool is the tool label of calls to names the upstream never listed.
const OtherTool = "_other"

// Metrics is mcpgate's Prometheus registry. Observe feeds it one record at a time;
// the gate and emitter figures are read at scrape time.
//
//	mcpgate_tool_calls_total{tool,action}          counter: calls by final action (docs/decisions.md#ladder)
//	mcpgate_tool_call_outcomes_total{outcome}      counter: ok, upstream_error, timeout, cancelled, rejected, unknown_tool, input_required
//	mcpgate_channel_messages_total{method,action}  counter: filtered messages of the other channels (docs/channels.md)
//	mcpgate_findings_total{rule,stage}             counter: calls in which a rule found something; stage input|output
//	mcpgate_policy_eval_seconds{phase}             histogram: pre/post policy time (record stage_ms)
//	mcpgate_upstream_latency_seconds               histogram: upstream time (record stage_ms.upstream)
//	mcpgate_guardrail_calls_total{guardrail,kind,result}  counter: callouts to outside guardrails; result is the verdict, the error, or cached (record guardrails)
//	mcpgate_guardrail_latency_seconds{guardrail}   histogram: time of one callout
//	mcpgate_policy_generation                      gauge: generation of the running policy set
//	mcpgate_policy_reload_success                  gauge: 1 when the last (re)load succeeded, else 0
//	mcpgate_policy_loaded_timestamp_seconds        gauge: when the running set was loaded
//	mcpgate_audit_records_written_total            counter: records every sink stored
//	mcpgate_audit_records_dropped_total            counter: records lost to a full buffer
//	mcpgate_audit_sink_errors_total                counter: records a sink failed to store
//	mcpgate_audit_buffer_queued                    gauge: records waiting in the buffer
type Metrics struct {
	Registry *prometheus.Registry

	calls    *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	channels *prometheus.CounterVec
	findings *prometheus.CounterVec
	policy   *prometheus.HistogramVec
	upstream prometheus.Histogram
	gcalls   *prometheus.CounterVec
	glatency *prometheus.HistogramVec

	mu         sync.Mutex
	tools      map[string]bool
	guardrails map[string]bool
}

// MaxGuardrailLabels caps distinct guardrail label values (names come from the
// configuration, so the cap only guards against a record from elsewhere).
const MaxGuardrailLabels = 64

// NewMetrics builds the registry. gate and stats are called at scrape time; either
// may be nil.
func NewMetrics(gate func() GateStatus, stats func() audit.Stats) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_calls_total", Help: "tools/call requests by tool and final action (pass, warn, redact, mask, block).",
		}, []string{"tool", "action"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_tool_call_outcomes_total", Help: "tools/call requests by upstream outcome.",
		}, []string{"outcome"}),
		channels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_channel_messages_total", Help: "Filtered server messages other than tools/call results (listings, resources, prompts, sampling, elicitation, logs) by method and final action.",
		}, []string{"method", "action"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_findings_total", Help: "tools/call requests in which a rule found something, by rule id and stage (input or output).",
		}, []string{"rule", "stage"}),
		policy: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_policy_eval_seconds", Help: "Time spent running the policies of one phase for one call.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 0.1 ms .. 6.6 s
		}, []string{"phase"}),
		upstream: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mcpgate_upstream_latency_seconds", Help: "Time the upstream MCP server took to answer a tools/call.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. 262 s
		}),
		gcalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgate_guardrail_calls_total", Help: "Callouts to outside guardrails (docs/guardrails.md) by guardrail, kind and result: a verdict (none, block, intervene, allow, deny), an error (guardrail_timeout, guardrail_error), or cached (the verdict cache answered, no call).",
		}, []string{"guardrail", "kind", "result"}),
		glatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpgate_guardrail_latency_seconds", Help: "Time of one callout to an outside guardrail, failures included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8), // 0.5 ms .. 8 s
		}, []string{"guardrail"}),
		tools:      map[string]bool{},
		guardrails: map[string]bool{},
	}
	reg := m.Registry
	reg.MustRegister(m.calls, m.outcomes, m.channels, m.findings, m.policy, m.upstream, m.gcalls, m.glatency)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if gate != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgate_policy_generation", Help: "Generation of the running policy set."},
				func() float64 { return float64(gate().Generation) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgate_policy_reload_success", Help: "1 when the last policy (re)load succeeded, 0 when it failed and the last good set is running."},
				func() float64 {
					if gate().LastError != "" {
						return 0
					}
					return 1
				}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgate_policy_loaded_timestamp_seconds", Help: "Unix time the running policy set was loaded (0 if unknown)."},
				func() float64 {
					if t := gate().LoadedAt; !t.IsZero() {
						return float64(t.UnixNano()) / 1e9
					}
					return 0
				}),
		)
	}
	if stats != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mcpgate_audit_records_written_total", Help: "Audit records every sink stored."},
				func() float64 { return float64(stats().Written) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mcpgate_audit_records_dropped_total", Help: "Audit records lost because the buffer was full (or the emitter closed)."},
				func() float64 { return float64(stats().Dropped) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mcpgate_audit_sink_errors_total", Help: "Audit records a sink failed to store."},
				func() float64 { return float64(stats().Errors) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgate_audit_buffer_queued", Help: "Audit records waiting in the buffer."},
				func() float64 { return float64(stats().Queued) }),
		)
	}
	return m
}

// Observe counts one record. It is cheap enough for the call path (a few atomic
// adds and one map lookup under a mutex) and reads only names, codes and timings.
func (m *Metrics) Observe(r *audit.Record) {
	action := vocab.Strongest(r.ActionTaken, vocab.Pass) // "" reads as pass
	if method := audit.RecordMethod(r); method != methods.ToolsCall {
		// a method of the gateway's table is a bounded label set; any other (an error
		// answering a method the gateway does not know) is "other"
		if methods.Of(method) == nil && method != vocab.MethodVet {
			method = "other"
		}
		m.channels.WithLabelValues(method, string(action)).Inc()
	} else {
		tool := OtherTool
		if r.Listed {
			tool = m.toolLabel(r.Tool)
		}
		m.calls.WithLabelValues(tool, string(action)).Inc()
		if r.Outcome != "" {
			m.outcomes.WithLabelValues(string(r.Outcome)).Inc()
		}
	}
	for _, id := range r.InputRuleIDs {
		m.findings.WithLabelValues(id, "input").Inc()
	}
	for _, id := range r.RuleIDs {
		m.findings.WithLabelValues(id, "output").Inc()
	}
	if v, ok := r.StageMS[vocab.StagePrePolicies]; ok {
		m.policy.WithLabelValues("pre").Observe(v / 1000)
	}
	if v, ok := r.StageMS[vocab.StagePostPolicies]; ok {
		m.policy.WithLabelValues("post").Observe(v / 1000)
	}
	if v, ok := r.StageMS[vocab.StageUpstream]; ok {
		m.upstream.Observe(v / 1000)
	}
	for _, g := range r.Guardrails {
		name, result := m.guardrailLabel(g.Name), g.Verdict
		switch {
		case g.Error != "":
			result = g.Error
		case g.Cached: // no callout: the verdict cache answered
			m.gcalls.WithLabelValues(name, g.Kind, "cached").Inc()
			continue
		}
		m.gcalls.WithLabelValues(name, g.Kind, result).Inc()
		m.glatency.WithLabelValues(name).Observe(g.MS / 1000)
	}
}

func (m *Metrics) guardrailLabel(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.guardrails[name] {
		return name
	}
	if len(m.guardrails) >= MaxGuardrailLabels {
		return OtherTool
	}
	m.guardrails[name] = true
	return name
}

// Write makes Metrics an audit sink: it counts r (Observe).
func (m *Metrics) Write(r *audit.Record) error { m.Observe(r); return nil }

// Close does nothing; the counters stay readable.
func (m *Metrics) Close() error { return nil }

func (m *Metrics) toolLabel(tool string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tools[tool] {
		return tool
	}
	if len(m.tools) >= MaxToolLabels {
		return OtherTool
	}
	m.tools[tool] = true
	return tool
}
