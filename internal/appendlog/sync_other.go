//go:build !linux

package appendlog

import "os"

// datasync is a full fsync where fdatasync(2) is not offered.
func datasync(f *os.File) error { return f.Sync() }
