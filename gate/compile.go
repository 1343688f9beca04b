package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpgate/mcpgate/gate/internal/policyast"
)

// TestSuffix marks a policy test file: Load never runs one as a policy, `mcpgate test`
// runs its test_* functions (docs/policies.md#tests).
const TestSuffix = "_test.js"

// IsTestFile reports whether a file name in a policies directory is a test file.
func IsTestFile(name string) bool { return strings.HasSuffix(name, TestSuffix) }

// DefaultPhases are the phases a policy runs in unless its source shows it does
// nothing there (docs/policies.md#phases).
var DefaultPhases = policyast.DefaultPhases

// policy is one compiled file (policyast.Compile): its program, shared by every pooled
// runtime, and the facts proven about it at load.
type policy = policyast.Policy

// compilePolicy compiles one file (policyast.Compile); its errors are *CompileError.
func compilePolicy(name string, src []byte) (policy, error) {
	return policyast.Compile(name, src)
}

// workDir is the working directory a relative policies path was read from.
func workDir() string {
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "the working directory"
}

// readDir lists the top-level *.js files of dir in lexical order with their sources.
// Subdirectories (policies/examples/) and test files (*_test.js) are never loaded.
func readDir(dir string) (names []string, srcs [][]byte, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if filepath.IsAbs(dir) {
				return nil, nil, fmt.Errorf("%w: %s", ErrNoDir, dir)
			}
			return nil, nil, fmt.Errorf("%w: %s (relative to %s; use an absolute path: Claude Desktop starts servers from /)", ErrNoDir, dir, workDir())
		}
		return nil, nil, fmt.Errorf("gate: policies directory: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("%w: %s is not a directory", ErrNoDir, dir)
	}
	return readFS(os.DirFS(dir))
}

// readFS lists the top-level *.js files of fsys in lexical order with their sources;
// dot files, subdirectories and anything but a regular file (after symlinks) are
// skipped.
func readFS(fsys fs.FS) (names []string, srcs [][]byte, err error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("gate: read policies directory: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".js") || strings.HasPrefix(name, ".") || IsTestFile(name) {
			continue
		}
		info, err := fs.Stat(fsys, name) // follows symlinks
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed while we listed
				continue
			}
			return nil, nil, fmt.Errorf("gate: %s: %w", name, err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, nil, fmt.Errorf("gate: read %s: %w", name, err)
		}
		srcs = append(srcs, b)
	}
	return names, srcs, nil
}

// BuiltinPrefix names the policies of Options.Builtin in a set's Files and records.
const BuiltinPrefix = "builtin/"

// withBuiltin puts the top-level *.js of builtin, named BuiltinPrefix+name, before
// names; a built-in file whose name is among names is left out.
func withBuiltin(builtin fs.FS, names []string, srcs [][]byte) ([]string, [][]byte, error) {
	bn, bs, err := readFS(builtin)
	if err != nil {
		return nil, nil, fmt.Errorf("gate: built-in policies: %w", err)
	}
	var outN []string
	var outS [][]byte
	for i, n := range bn {
		if !slices.Contains(names, n) {
			outN, outS = append(outN, BuiltinPrefix+n), append(outS, bs[i])
		}
	}
	return append(outN, names...), append(outS, srcs...), nil
}

// hashSources is the sha256 (hex) over each file's name and contents in run order.
func hashSources(names []string, srcs [][]byte) string {
	h := sha256.New()
	for i, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(srcs[i])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
