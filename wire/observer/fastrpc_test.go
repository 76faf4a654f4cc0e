package observer

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNotPlain8 holds the word-at-a-time test to plainByte: its lowest
// flag is the first byte that is not plain, for every byte value at every
// position, after plain bytes and after any bytes at all.
func TestNotPlain8(t *testing.T) {
	first := func(w []byte) int {
		for i, c := range w {
			if !plainByte[c] {
				return i
			}
		}
		return 8
	}
	check := func(w []byte) {
		m := notPlain8(binary.LittleEndian.Uint64(w))
		require.Equal(t, first(w), bits.TrailingZeros64(m)/8, "word %q", w)
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		w := binary.LittleEndian.AppendUint64(nil, rng.Uint64())
		check(w)
	}
}
