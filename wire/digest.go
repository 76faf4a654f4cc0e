package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// ArgsDigest is [Message.ArgsDigest] for the given tools/call arguments: the
// SHA-256 (lower-case hex) of the arguments decoded and encoded again by
// encoding/json, with numbers kept as written (json.Number) and without
// HTML escaping. The encoding sorts object keys and drops insignificant
// white space, so two spellings of the same arguments (key order, spaces,
// string escapes) share a digest; numbers keep their spelling (1 and 1.0
// differ), and of a key given twice the last one counts. It fails for
// bytes that are not one JSON value.
func ArgsDigest(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", errors.New("trailing data after the arguments")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:]), nil
}
