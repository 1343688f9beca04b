package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/natefinch/lumberjack.v2"
)

// OpenJSONLFile returns a JSONL sink appending to path, created with mode 0600 as
// every file that holds records.
func OpenJSONLFile(path string) (*JSONL, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return NewJSONL(f), nil
}

// NewRotatingFile returns a JSONL sink writing to path, rotated when it passes
// maxMB megabytes; keep old files are kept (0 keeps all). Rotated files are named
// path-<timestamp>.jsonl beside it. The directory must exist; the file is created
// with mode 0600.
func NewRotatingFile(path string, maxMB, keep int) (*JSONL, error) {
	if maxMB <= 0 {
		return nil, errors.New("audit: rotate size must be at least 1 MB")
	}
	if keep < 0 {
		return nil, errors.New("audit: keep must not be negative")
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("audit: directory of %s does not exist", path)
	}
	// lumberjack creates the file lazily with 0600 on first write; create it now so a
	// permission problem is a start-up error.
	f, err := OpenJSONLFile(path)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	return NewJSONL(&lumberjack.Logger{Filename: path, MaxSize: maxMB, MaxBackups: keep}), nil
}
