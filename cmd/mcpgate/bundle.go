package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/bundle"
)

func init() { subcommands = append(subcommands, newBundleCmd) }

func newBundleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle (build DIR -o FILE --signing-key KEY | verify FILE --key PUB)",
		Short: "Build or verify a signed policy bundle that gateway run --policy-bundle pulls",
		Long: `A policy bundle is a tar.gz of a policies directory's top-level *.js (the
policies and their *_test.js) with a .manifest (revision, previous, min_mcpgate,
roots) and a .signatures.json: one JWS over the SHA-256 of every file. Every replica
of a fleet pulls it with gateway run --policy-bundle URL --bundle-key PUB
(docs/deploy.md#fleet).

Keys are PEM files as openssl writes them: Ed25519, RSA (2048 bits or more) or
ECDSA (P-256, P-384, P-521).
  openssl genpkey -algorithm ed25519 -out bundle.key
  openssl pkey -in bundle.key -pubout -out bundle.pub

Exit status: 0 when the bundle was built or verifies, 1 otherwise (the message says
why).`,
		Example: `  mcpgate bundle build policies -o bundle-1.tar.gz --signing-key bundle.key --revision 1
  mcpgate bundle build policies -o bundle-2.tar.gz --signing-key bundle.key --previous bundle-1.tar.gz
  mcpgate bundle verify bundle-2.tar.gz --key bundle.pub`,
	}
	var out, signingKey, revision, previous, minVersion string
	var roots, accept []string
	build := &cobra.Command{
		Use:   "build DIR -o FILE --signing-key KEY [--revision R] [--previous FILE-or-hash]",
		Short: "Pack and sign the policies and tests of DIR",
		Long: `build packs DIR's top-level *.js (policies and *_test.js; subdirectories, dot
files and other files are left out) and signs them with --signing-key. It does not
compile the policies or run their tests, and a gateway refuses a bundle whose tests
fail: run mcpgate test DIR first. A DIR with no policy (only tests, or nothing) is
refused, as is an -o that is the --previous file.

--previous names the bundle this one replaces, by file or by its sha256:HEX hash:
a gateway takes a bundle only when its previous is the running bundle or one it ran
before. --revision defaults to the previous bundle's revision plus one when that is
a number (the previous file must then verify with the signing key), else 1 without
--previous. The hash is sha256: and the file's hex SHA-256 (sha256sum FILE), as
build prints it.

Roll back by building the older policies as a new revision with --previous set to
the running bundle: a gateway refuses a bundle it ran before (docs/deploy.md#fleet).

--accept-diff POLICY (repeatable) signs into the manifest that the blocks and
rejections of the policy file POLICY may differ from the running set's: a gateway
running with --bundle-shadow takes the revision although its shadow run on live
traffic blocks or lets through calls by that policy that the running set did not
(docs/decisions.md#bundle-shadow). Name a policy added, changed or removed on
purpose.`,
		Example: `  mcpgate test policies
  mcpgate bundle build policies -o bundle-1.tar.gz --signing-key bundle.key --revision 1
  mcpgate bundle build policies -o bundle-2.tar.gz --signing-key bundle.key --previous bundle-1.tar.gz`,
		Args: exactArgs(1, "bundle build: want one policies directory DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" || signingKey == "" {
				return errors.New("bundle build: give -o FILE and --signing-key KEY")
			}
			if previous != "" && sameFile(out, previous) {
				return fmt.Errorf("bundle build: -o %s is the --previous bundle: write the new revision to a file of its own, and keep the previous one to chain from", out)
			}
			if err := hasPolicy(args[0]); err != nil {
				return fmt.Errorf("bundle build: %w", err)
			}
			key, err := bundle.LoadPrivateKey(signingKey)
			if err != nil {
				return fmt.Errorf("--signing-key: %w", err)
			}
			m := bundle.Manifest{Revision: revision, MinMCPGate: minVersion, Roots: roots, AcceptDifferences: accept}
			prevRev := "0"
			if previous != "" {
				if m.Previous, err = bundleRef(previous); err != nil {
					return fmt.Errorf("--previous: %w", err)
				}
				prevRev = ""
				if data, err := os.ReadFile(previous); err == nil {
					if b, err := bundle.Read(data, key.Public()); err == nil {
						prevRev = b.Manifest.Revision
					}
				}
			}
			if m.Revision == "" {
				n, err := strconv.ParseUint(prevRev, 10, 63)
				if err != nil {
					return errors.New("bundle build: give --revision: the previous bundle's revision is not a number this key signed")
				}
				m.Revision = strconv.FormatUint(n+1, 10)
			}
			data, err := bundle.Build(args[0], m, key)
			if err != nil {
				return fmt.Errorf("bundle build: %w", err)
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: revision %s, %s\n", out, m.Revision, bundle.Hash(data))
			return nil
		},
	}
	fl := build.Flags()
	fl.StringVarP(&out, "output", "o", "", "the bundle file to write")
	fl.StringVar(&signingKey, "signing-key", "", "PEM private key (PKCS#8) to sign with")
	fl.StringVar(&revision, "revision", "", "the bundle's revision, as records carry it (default: the previous revision plus one, or 1)")
	fl.StringVar(&previous, "previous", "", "the bundle this one replaces: its file, or its sha256:HEX hash")
	fl.StringVar(&minVersion, "min-mcpgate", "", "the oldest mcpgate release that may run the bundle, e.g. v1.4.0")
	fl.StringSliceVar(&roots, "root", nil, "a part of the policy name space the bundle owns, for the manifest (repeatable; informational)")
	fl.StringArrayVar(&accept, "accept-diff", nil, "a policy file (deny_shell.js) whose blocks and rejections may differ from the running set's in a --bundle-shadow run (repeatable)")
	var pub, follows string
	verify := &cobra.Command{
		Use:   "verify FILE --key PUB [--previous FILE-or-hash]",
		Short: "Check a bundle's signature and files; exit 0 only when it verifies",
		Long: `verify checks FILE's signature with --key, every file against it and the
manifest's shape. With --previous it also checks that FILE replaces that bundle (its
manifest's previous is the other's hash), as a gateway running it would want. It
prints the revision, hash, previous and the policies and tests the bundle carries.

It does not compile the policies or run their tests; a gateway does both and refuses
the bundle when either fails, so a bundle that verifies can still be refused: run
mcpgate test on the directory it was built from.`,
		Example: `  mcpgate bundle verify bundle-2.tar.gz --key bundle.pub --previous bundle-1.tar.gz`,
		Args:    exactArgs(1, "bundle verify: want one bundle FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pub == "" {
				return errors.New("bundle verify: give --key PUB")
			}
			key, err := bundle.LoadPublicKey(pub)
			if err != nil {
				return fmt.Errorf("--key: %w", err)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			b, err := bundle.Read(data, key)
			if err != nil {
				return fmt.Errorf("bundle verify: %s: %w", args[0], err)
			}
			if follows != "" {
				want, err := bundleRef(follows)
				if err != nil {
					return fmt.Errorf("--previous: %w", err)
				}
				if b.Manifest.Previous != want {
					return fmt.Errorf("bundle verify: %s: broken chain: its previous is %s, not %s", args[0], cmp.Or(b.Manifest.Previous, "(none)"), want)
				}
			}
			var policies, tests []string
			for name := range b.Files {
				if gate.IsTestFile(name) {
					tests = append(tests, name)
				} else {
					policies = append(policies, name)
				}
			}
			slices.Sort(policies)
			slices.Sort(tests)
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: verified\n  revision  %s\n  hash      %s\n  previous  %s\n", args[0], b.Manifest.Revision, b.Hash, cmp.Or(b.Manifest.Previous, "(none)"))
			if b.Manifest.MinMCPGate != "" {
				fmt.Fprintf(w, "  min_mcpgate %s\n", b.Manifest.MinMCPGate)
			}
			if len(b.Manifest.AcceptDifferences) > 0 {
				fmt.Fprintf(w, "  accepted differences %s\n", strings.Join(b.Manifest.AcceptDifferences, " "))
			}
			fmt.Fprintf(w, "  policies  %s\n  tests     %s\n", cmp.Or(strings.Join(policies, " "), "(none)"), cmp.Or(strings.Join(tests, " "), "(none)"))
			return nil
		},
	}
	verify.Flags().StringVar(&pub, "key", "", "PEM public key (SPKI) the bundle must be signed with")
	verify.Flags().StringVar(&follows, "previous", "", "the bundle FILE must replace: its file, or its sha256:HEX hash")
	cmd.AddCommand(build, verify)
	return cmd
}

// exactArgs wants n arguments and says msg otherwise.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s, got %d argument(s)", msg, len(args))
		}
		return nil
	}
}

// bundleRef is a bundle's hash given as sha256:HEX or as the bundle's file.
func bundleRef(s string) (string, error) {
	if hashRef.MatchString(s) {
		return s, nil
	}
	data, err := os.ReadFile(s)
	if err != nil {
		return "", err
	}
	return bundle.Hash(data), nil
}

var hashRef = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// hasPolicy is nil when dir holds a top-level policy (*.js, not *_test.js, not a
// dot file): a bundle without one would leave every replica that takes it
// enforcing no policy at all.
func hasPolicy(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("policies directory: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".js") && !strings.HasSuffix(n, "_test.js") && !strings.HasPrefix(n, ".") {
			return nil
		}
	}
	return fmt.Errorf("%s holds no policy (a top-level *.js that is not a *_test.js): a replica taking the bundle would enforce none", dir)
}
