package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
)

// telemetryFlags are the audit-sink and admin-listener flags of gateway run (issue 5).
type telemetryFlags struct{}

func (t *telemetryFlags) register(fl *pflag.FlagSet) {}

// sinks returns the audit sinks chosen by flags or configuration; nil means the
// default JSONL on stderr (or --audit-file).
func (t *telemetryFlags) sinks(cfg *config.Config, stderr io.Writer, log *slog.Logger) ([]audit.Sink, error) {
	return nil, nil
}

// serve starts the admin listener when one is configured; stop shuts it down.
func (t *telemetryFlags) serve(ctx context.Context, d *gatewayDeps) (stop func(), err error) {
	return func() {}, nil
}
