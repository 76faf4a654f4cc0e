package wire

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendRecord appends the JSON of r, byte for byte what json.Marshal
// writes, without reflection: the observer writes a record for every event
// at both edges, and encoding/json took several times as long as reading
// the event. It reports false for a record it leaves to encoding/json: one
// with tools/call arguments (json.Marshal compacts raw JSON) or a number
// JSON cannot hold. TestAppendRecordIsMarshal holds every field to
// json.Marshal's encoding, so a field added to a record fails it until it
// is encoded here too.
func appendRecord(b []byte, r *Record) ([]byte, bool) {
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, r.N, 10)
	b = append(b, `,"t_us":`...)
	b = strconv.AppendInt(b, r.TUS, 10)
	b = append(b, `,"edge":`...)
	b = appendString(b, string(r.Edge))
	b = append(b, `,"conn":`...)
	b = strconv.AppendInt(b, r.Conn, 10)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(r.Kind))
	b = appendInt(b, `,"x":`, r.Exchange)
	b = appendField(b, `,"peer":`, r.Peer)
	b = appendField(b, `,"method":`, r.Method)
	b = appendField(b, `,"path":`, r.Path)
	b = appendInt(b, `,"status":`, int64(r.Status))
	if h := r.Header; h != nil {
		b = append(b, `,"header":{`...)
		start := len(b)
		b = appendField(b, `,"mcp_session_id":`, h.SessionID)
		b = appendField(b, `,"mcp_protocol_version":`, h.ProtocolVersion)
		b = appendField(b, `,"last_event_id":`, h.LastEventID)
		b = appendField(b, `,"mcp_method":`, h.MCPMethod)
		b = appendField(b, `,"mcp_name":`, h.MCPName)
		b = appendField(b, `,"origin":`, h.Origin)
		b = appendField(b, `,"accept":`, h.Accept)
		b = appendField(b, `,"content_type":`, h.ContentType)
		if len(b) > start {
			b = append(b[:start], b[start+1:]...) // the first field's comma
		}
		b = append(b, '}')
	}
	b = appendInt(b, `,"size":`, r.Size)
	if len(r.Messages) > 0 {
		b = append(b, `,"messages":[`...)
		for i := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendMessage(b, &r.Messages[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b = appendField(b, `,"error_body":`, r.ErrorBody)
	b = appendField(b, `,"event_id":`, r.EventID)
	b = appendField(b, `,"event_type":`, r.EventType)
	b = appendInt(b, `,"retry_ms":`, r.RetryMS)
	b = appendBool(b, `,"priming":`, r.Priming)
	b = appendField(b, `,"end":`, string(r.End))
	b = appendField(b, `,"by":`, string(r.By))
	b = appendInt(b, `,"bytes_up":`, r.BytesUp)
	b = appendInt(b, `,"bytes_down":`, r.BytesDown)
	b = appendField(b, `,"detail":`, r.Detail)
	b = appendField(b, `,"problem":`, r.Problem)
	return append(b, '}'), true
}

// appendMessage appends one message. Its fields are all omitempty: each is
// written after a comma, and the first comma is taken out at the end.
func appendMessage(b []byte, m *Message) ([]byte, bool) {
	if len(m.Args) > 0 {
		return b, false
	}
	b = append(b, '{')
	start := len(b)
	b = appendField(b, `,"id":`, m.ID)
	b = appendField(b, `,"method":`, m.Method)
	b = appendBool(b, `,"response":`, m.Response)
	b = appendField(b, `,"tool":`, m.Tool)
	b = appendField(b, `,"args_digest":`, m.ArgsDigest)
	b = appendField(b, `,"client_name":`, m.ClientName)
	b = appendField(b, `,"protocol":`, m.Protocol)
	b = appendField(b, `,"progress_token":`, m.ProgressToken)
	for _, f := range [...]struct {
		key string
		v   *float64
	}{{`,"progress":`, m.Progress}, {`,"total":`, m.Total}} {
		if f.v == nil {
			continue
		}
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
			return b, false
		}
		b = appendFloat(append(b, f.key...), *f.v)
	}
	b = appendField(b, `,"request_id":`, m.RequestID)
	b = appendBool(b, `,"is_error":`, m.IsError)
	b = appendInt(b, `,"error_code":`, int64(m.ErrorCode))
	b = appendField(b, `,"error_message":`, m.ErrorMessage)
	b = appendField(b, `,"result_type":`, m.ResultType)
	b = appendField(b, `,"task_id":`, m.TaskID)
	b = appendField(b, `,"task_status":`, m.TaskStatus)
	b = appendField(b, `,"problem":`, m.Problem)
	if len(b) > start {
		b = append(b[:start], b[start+1:]...)
	}
	return append(b, '}'), true
}

// appendField appends an omitempty string field.
func appendField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendInt(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

func appendBool(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// appendFloat writes a float64 as encoding/json does: like ES6, decimal
// unless very small or large, and an exponent without a leading zero.
func appendFloat(b []byte, f float64) []byte {
	// Progress numbers are mostly integers: below 2^53 their digits are
	// their shortest decimal form (negative zero is not: it is "-0").
	if n := int64(f); float64(n) == f && -1<<53 < n && n < 1<<53 && (n != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, n, 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// htmlSafe marks the bytes appendString copies as they are: printable
// ASCII but the quote, the backslash, <, > and &.
var htmlSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString writes a JSON string as encoding/json does with HTML
// escaping: quotes, backslashes, control bytes, <, > and & escaped, invalid
// UTF-8 replaced by U+FFFD, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	i := 0
	for i < len(s) && htmlSafe[s[i]] {
		i++
	}
	if i == len(s) { // the common case: nothing to escape
		return append(append(b, s...), '"')
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
