package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// wrapPrefix opens the per-policy function scope on the policy's first line, so line
// numbers in errors stay those of the file (DECISIONS "Gate", "Isolation").
const (
	wrapPrefix = "(function (ctx) {"
	wrapSuffix = "\n})"
)

// policy is one compiled file.
type policy struct {
	name string
	prg  *goja.Program // evaluates to the wrapper function
}

// readDir lists the top-level *.js files of dir in lexical order with their sources.
// Subdirectories (policies/examples/) are never loaded.
func readDir(dir string) (names []string, srcs [][]byte, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %s (use an absolute path; Claude Desktop starts servers from /)", ErrNoDir, dir)
		}
		return nil, nil, fmt.Errorf("gate: policies directory: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("%w: %s is not a directory", ErrNoDir, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("gate: read policies directory: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".js") || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := os.Stat(filepath.Join(dir, name)) // follows symlinks
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
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("gate: read %s: %w", name, err)
		}
		srcs = append(srcs, b)
	}
	return names, srcs, nil
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

// compilePolicy wraps src in its function scope and compiles it once; the program is
// shared by every pooled runtime. Source maps are never read (parser option).
func compilePolicy(name string, src []byte) (*goja.Program, error) {
	text := wrapPrefix + string(src) + wrapSuffix
	ast, err := parser.ParseFile(nil, name, text, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		var one *parser.Error
		switch {
		case errors.As(err, &list) && len(list) > 0:
			return nil, compileErr(name, list[0].Position.Line, list[0].Position.Column, list[0].Message)
		case errors.As(err, &one):
			return nil, compileErr(name, one.Position.Line, one.Position.Column, one.Message)
		}
		return nil, &CompileError{File: name, Msg: err.Error()}
	}
	if names := implicitGlobals(ast); len(names) > 0 {
		// declare sloppy implicit globals as the policy's own locals (see implicitGlobals)
		decl := wrapPrefix + string(src) + "\n;var " + strings.Join(names, ", ") + ";})"
		if a2, err := parser.ParseFile(nil, name, decl, 0, parser.WithDisableSourceMaps); err == nil {
			if prg, err := goja.CompileAST(a2, false); err == nil {
				return prg, nil
			}
		}
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		var se *goja.CompilerSyntaxError
		var re *goja.CompilerReferenceError
		switch {
		case errors.As(err, &se) && se.File != nil:
			p := se.File.Position(se.Offset)
			return nil, compileErr(name, p.Line, p.Column, se.Message)
		case errors.As(err, &re) && re.File != nil:
			p := re.File.Position(re.Offset)
			return nil, compileErr(name, p.Line, p.Column, re.Message)
		}
		return nil, &CompileError{File: name, Msg: err.Error()}
	}
	return prg, nil
}

func compileErr(name string, line, col int, msg string) *CompileError {
	if line == 1 {
		col -= len(wrapPrefix)
		if col < 1 {
			col = 1
		}
	}
	return &CompileError{File: name, Line: line, Column: col, Msg: msg}
}
