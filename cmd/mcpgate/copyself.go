package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newCopySelfCmd) }

// newCopySelfCmd copies this binary into a directory and makes an empty policies
// directory beside it: the chart's init container puts mcpgate on a volume the stdio
// server containers share, since the image has no shell and no cp
// (docs/deploy.md#stdio-servers).
func newCopySelfCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "copy-self DIR",
		Short: "Copy this binary to DIR/mcpgate (and make DIR/policies) for a server container to run",
		Long: `copy-self copies the running mcpgate binary to DIR/mcpgate (mode 0755) and makes an
empty DIR/policies directory. The Helm chart's init container runs it so that each
stdio server's container, built from an image that has the server's runtime (Node,
Python), serves the server over loopback with "DIR/mcpgate gateway run --listen
127.0.0.1:PORT --policies DIR/policies -- COMMAND" (docs/deploy.md#stdio-servers).`,
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return copySelf(args[0])
		},
	}
}

// copySelf copies os.Executable() to dir/mcpgate through a temporary file (renamed, so
// a reader never sees half a binary) and makes dir/policies.
func copySelf(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("copy-self: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("copy-self: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		return fmt.Errorf("copy-self: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".mcpgate-*")
	if err != nil {
		return fmt.Errorf("copy-self: %w", err)
	}
	_, err = io.Copy(tmp, in)
	err = errors.Join(err, tmp.Chmod(0o755), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, "mcpgate"))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("copy-self: %w", err)
	}
	return nil
}
