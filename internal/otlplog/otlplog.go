// Package otlplog exports audit records as OpenTelemetry log records over OTLP/HTTP
// (go.opentelemetry.io/otel), for a SIEM that reads OTLP. It is an audit.Sink: the
// emitter hands it records off the call path, and the SDK's batch processor sends
// them. See docs/telemetry.md#otlp.
package otlplog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/logging"
	"github.com/mcpgate/mcpgate/vocab"
)

// Sink sends each record as one log record: the body is the record's JSON line (it
// holds names, codes and timings only, never a value), the timestamp is the record's
// ts, the severity WARN for a block or warn and INFO otherwise, and the attributes
// repeat the fields a SIEM filters on: mcpgate.event_id, mcpgate.action_taken,
// mcpgate.tool, mcpgate.outcome, mcpgate.reason, mcpgate.replica, mcpgate.kind.
type Sink struct {
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
}

// New returns a sink exporting to endpoint, the collector's OTLP/HTTP base URL
// (http://HOST:4318 or https://…; logs go to /v1/logs). A user-info in it
// (https://USER:PASSWORD@HOST) is sent as HTTP Basic authorization on every export
// and never appears in an error. service names the resource.
func New(endpoint, service, version string) (*Sink, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want http://HOST:PORT or https://HOST:PORT", logging.StripUserinfo(endpoint))
	}
	opts := []otlploghttp.Option{otlploghttp.WithEndpoint(u.Host), otlploghttp.WithTimeout(10 * time.Second)}
	if u.User != nil {
		pw, _ := u.User.Password()
		basic := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
		opts = append(opts, otlploghttp.WithHeaders(map[string]string{"Authorization": "Basic " + basic}))
	}
	if u.Scheme == "http" {
		opts = append(opts, otlploghttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, otlploghttp.WithURLPath(u.Path))
	}
	exp, err := otlploghttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service), semconv.ServiceVersion(version))
	p := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	return &Sink{provider: p, logger: p.Logger("mcpgate/audit")}, nil
}

// Write hands r to the batch processor.
func (s *Sink) Write(r *audit.Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("otlp: encode record: %w", err)
	}
	var rec otellog.Record
	if t, err := time.Parse(audit.TSLayout, r.TS); err == nil {
		rec.SetTimestamp(t)
	}
	rec.SetObservedTimestamp(time.Now())
	sev, text := otellog.SeverityInfo, "INFO"
	if r.ActionTaken == vocab.Block || r.ActionTaken == vocab.Warn {
		sev, text = otellog.SeverityWarn, "WARN"
	}
	rec.SetSeverity(sev)
	rec.SetSeverityText(text)
	rec.SetEventName("mcpgate.audit")
	rec.SetBody(attribute.StringValue(string(b)))
	rec.AddAttributes(
		attribute.String("mcpgate.event_id", r.EventID),
		attribute.String("mcpgate.action_taken", string(r.ActionTaken)),
		attribute.String("mcpgate.tool", r.Tool),
		attribute.String("mcpgate.outcome", string(r.Outcome)),
		attribute.String("mcpgate.reason", string(r.Reason)),
		attribute.String("mcpgate.replica", r.Replica),
		attribute.String("mcpgate.kind", r.Kind),
	)
	s.logger.Emit(context.Background(), rec)
	return nil
}

// Flush sends what the batch processor holds; a failed export is reported once per
// flush (the SDK does not say how many records it lost).
func (s *Sink) Flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.provider.ForceFlush(ctx)
}

// Close flushes and stops the exporter.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.provider.Shutdown(ctx)
}

var _ audit.Sink = (*Sink)(nil)
