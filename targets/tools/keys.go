package tools

import "sync"

// Keys remembers the idempotency keys charged so far. *store.Store of the
// reference server is one (durable with its file store); [MemoryKeys] is
// another.
type Keys interface {
	// ReserveKey claims key before its charge is recorded. It reports
	// false when the key was claimed before.
	ReserveKey(key string) (fresh bool, err error)
	// ReleaseKey gives back a key whose charge was not recorded.
	ReleaseKey(key string) error
}

// MemoryKeys is a [Keys] that lives as long as its process. It is safe for
// concurrent use.
type MemoryKeys struct {
	mu   sync.Mutex
	keys map[string]bool
}

// NewMemoryKeys returns an empty key set.
func NewMemoryKeys() *MemoryKeys { return &MemoryKeys{keys: map[string]bool{}} }

// ReserveKey implements [Keys]; it never fails.
func (m *MemoryKeys) ReserveKey(key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[key] {
		return false, nil
	}
	m.keys[key] = true
	return true, nil
}

// ReleaseKey implements [Keys]; it never fails.
func (m *MemoryKeys) ReleaseKey(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, key)
	return nil
}
