package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/pflag"
)

// httpFlags are the Streamable HTTP front's flags of gateway run (issue 6).
type httpFlags struct {
	listen string
}

func (h *httpFlags) register(fl *pflag.FlagSet) {}

// enabled reports whether gateway run serves HTTP instead of stdio.
func (h *httpFlags) enabled() bool { return h.listen != "" }

// runHTTP serves MCP over Streamable HTTP at /mcp (issue 6).
func runHTTP(ctx context.Context, d *gatewayDeps, f gatewayFlags, argv []string, stderr io.Writer) error {
	return errors.New("--listen is not implemented yet")
}
