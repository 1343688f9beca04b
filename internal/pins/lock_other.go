//go:build !unix

package pins

// lockFile has no cross-process lock here: two gateways sharing one pin file can
// lose each other's pins; give each its own --pins file.
func lockFile(string) (func(), error) { return func() {}, nil }
