package observer

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The fast path reads the common JSON-RPC messages of an SSE stream
// (progress notifications, results, errors) in one pass over the bytes,
// without reflection. It reads only what it can read exactly as
// [eventMessage]'s slow path (mcp.ParseMessage and encoding/json)
// does, and gives up on anything else — an escape or a non-ASCII byte in a
// string it keeps, a key that encoding/json would match without regard to
// case, a key given twice, a tools/call or initialize, an invalid message —
// which the slow path then reads. FuzzMessages holds the two to the same
// result.

// maxFastDepth bounds the nesting the fast path follows.
const maxFastDepth = 32

// plainByte marks the bytes a string may hold as they are: printable
// ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// knownMethods are method names the fast path returns without allocating.
var knownMethods = []string{mcp.MethodProgress, mcp.MethodCancelled, mcp.MethodPing,
	"notifications/message", "notifications/tasks/status", "notifications/resources/updated",
	"notifications/tools/list_changed"}

// fastMessage reads b as one JSON-RPC message into m, which must be zero,
// keeping progress numbers in nums and strings that repeat from event to
// event (a progress token, say) in in. It reports false, leaving m to be
// reset, when it cannot read b.
func fastMessage(b []byte, m *wire.Message, nums *[2]float64, in *interner) bool {
	if bytes.HasPrefix(b, progressPrefix) && fastProgress(b, m, nums, in) {
		return true
	}
	s := scanner{b: b, in: in}
	var seen struct{ jsonrpc, id, method, params, result, error bool }
	var params []byte // params met before the method: read once it is known
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "jsonrpc":
			var v []byte
			v, ok = s.plainString()
			return once(&seen.jsonrpc) && ok && string(v) == "2.0"
		case "id":
			m.ID, ok = s.id()
			return once(&seen.id) && ok
		case "method":
			var v []byte
			v, ok = s.plainString()
			m.Method = s.intern(v)
			// A tools/call's arguments are digested, and initialize is
			// rare: both are left to the slow path.
			return once(&seen.method) && ok && len(v) > 0 &&
				m.Method != mcp.MethodToolsCall && m.Method != mcp.MethodInitialize
		case "params":
			if !once(&seen.params) {
				return false
			}
			if seen.method {
				return s.params(m, nums)
			}
			params, ok = s.value()
			return ok
		case "result":
			return once(&seen.result) && s.result(m)
		case "error":
			return once(&seen.error) && s.rpcError(m)
		}
		return !foldsTo(key, "jsonrpc", "id", "method", "params", "result", "error") && s.skip()
	})
	if !ok || !s.end() || !seen.jsonrpc {
		return false
	}
	if m.Method != "" {
		if params != nil {
			ps := scanner{b: params, in: in}
			ok = ps.params(m, nums)
		}
		return ok && !seen.result && !seen.error
	}
	m.Response = true
	return seen.id && seen.result != seen.error
}

// progressPrefix is how most servers begin a progress notification: keys
// in this order, no white space.
var progressPrefix = []byte(`{"jsonrpc":"2.0","method":"` + mcp.MethodProgress + `","params":`)

// fastProgress reads a message that begins with progressPrefix as
// fastMessage would, without walking the prefix: its params, and then
// nothing but the end of the message. It reports false, leaving m to be
// reset, for anything else (a key after params, say), which fastMessage
// then reads from the start.
func fastProgress(b []byte, m *wire.Message, nums *[2]float64, in *interner) bool {
	s := scanner{b: b, i: len(progressPrefix), depth: 1, in: in}
	m.Method = mcp.MethodProgress
	if !s.params(m, nums) || s.peek() != '}' {
		*m = wire.Message{}
		return false
	}
	s.i++
	if !s.end() {
		*m = wire.Message{}
		return false
	}
	return true
}

// params reads the params a record keeps of a notification or of a
// request other than tools/call and initialize.
func (s *scanner) params(m *wire.Message, nums *[2]float64) bool {
	if !s.isObject() {
		return s.skip()
	}
	progress := m.Method == mcp.MethodProgress
	var seen struct{ meta, taskID, token, progress, total, requestID bool }
	// A progress notification's own token wins over a _meta one, as in
	// readParams.
	var token string
	var tokenSet bool
	ok := s.object(func(key []byte) bool {
		switch {
		case string(key) == "_meta":
			return once(&seen.meta) && s.meta(m)
		case string(key) == "taskId":
			return once(&seen.taskID) && s.stringField(&m.TaskID)
		case string(key) == "progressToken" && progress:
			return once(&seen.token) && s.token(&token, &tokenSet)
		case string(key) == "progress" && progress:
			return once(&seen.progress) && s.number(&m.Progress, &nums[0])
		case string(key) == "total" && progress:
			return once(&seen.total) && s.number(&m.Total, &nums[1])
		case string(key) == "requestId" && m.Method == mcp.MethodCancelled:
			var set bool
			return once(&seen.requestID) && s.token(&m.RequestID, &set)
		}
		return !foldsTo(key, "_meta", "taskId", "progressToken", "progress", "total", "requestId",
			"name", "arguments", "protocolVersion", "clientInfo") && s.skip()
	})
	if tokenSet {
		m.ProgressToken = token
	}
	return ok
}

// meta reads a request's _meta: only its progress token.
func (s *scanner) meta(m *wire.Message) bool {
	if s.null() {
		return true
	}
	var seen, set bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "progressToken":
			return once(&seen) && s.token(&m.ProgressToken, &set)
		case metaClientInfo, metaProtocolVersion, metaRelatedTask:
			return false // 2026-07-28 requests and 2025-11-25 tasks: the slow path
		}
		return !foldsTo(key, "progressToken", metaClientInfo, metaProtocolVersion, metaRelatedTask) && s.skip()
	})
}

// result reads what a record keeps of a result.
func (s *scanner) result(m *wire.Message) bool {
	if !s.isObject() {
		return s.skip()
	}
	var seen struct{ isError, resultType, protocol, taskID, status bool }
	var status []byte // read only alongside a taskId: kept raw until then
	var hasTask bool  // a taskId other than null
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "isError":
			return once(&seen.isError) && s.boolean(&m.IsError)
		case "resultType":
			return once(&seen.resultType) && s.stringField(&m.ResultType)
		case "protocolVersion":
			return once(&seen.protocol) && s.stringField(&m.Protocol)
		case "taskId":
			hasTask = s.peek() != 'n'
			return once(&seen.taskID) && s.stringField(&m.TaskID)
		case "status":
			status, ok = s.value()
			return once(&seen.status) && ok
		case "task", "_meta":
			return false // 2025-11-25 tasks, and a result's _meta: the slow path
		}
		return !foldsTo(key, "isError", "resultType", "protocolVersion", "taskId", "status", "task", "_meta") && s.skip()
	})
	if ok && hasTask && status != nil {
		st := scanner{b: status, in: s.in}
		return st.stringField(&m.TaskStatus) && st.end()
	}
	return ok
}

// rpcError reads a JSON-RPC error object: an integer code and a message.
func (s *scanner) rpcError(m *wire.Message) bool {
	var seen struct{ code, message, data bool }
	m.IsError = true
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "data":
			return once(&seen.data) && s.skip()
		case "code":
			v, ok := s.value()
			n, err := strconv.ParseInt(string(v), 10, 0)
			m.ErrorCode = int(n)
			return once(&seen.code) && ok && err == nil
		case "message":
			return once(&seen.message) && s.stringField(&m.ErrorMessage)
		}
		return !foldsTo(key, "code", "message", "data") && s.skip()
	})
}

// once reports whether a field is seen for the first time; it marks it
// seen.
func once(seen *bool) bool {
	first := !*seen
	*seen = true
	return first
}

// interner keeps the last few strings a parser made, so that a value that
// repeats from event to event (a progress token, a method) is not
// allocated again.
type interner struct {
	last [4]string
	next int
}

// intern returns b as a string: a known method name, one of the last few,
// or a new one.
func (s *scanner) intern(b []byte) string {
	for _, m := range knownMethods {
		if string(b) == m {
			return m
		}
	}
	if s.in == nil {
		return string(b)
	}
	for _, v := range s.in.last {
		if v == string(b) {
			return v
		}
	}
	v := string(b)
	s.in.last[s.in.next] = v
	s.in.next = (s.in.next + 1) % len(s.in.last)
	return v
}

// foldsTo reports whether key equals one of names without regard to
// (ASCII) case: encoding/json would take it for that field. Keys the fast
// path reads are ASCII.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if fold(key, n) {
			return true
		}
	}
	return false
}

// scanner walks JSON text. Its methods report false for text that is not
// JSON, or that the fast path does not read.
type scanner struct {
	b     []byte
	i     int
	depth int
	in    *interner // nil: every string is new
}

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // most JSON on the wire has no white space
	}
	b, i := s.b, s.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	s.i = i
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) isObject() bool { return s.peek() == '{' }

func (s *scanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object walks an object, calling member for each key with the scanner at
// the key's value; member must consume the value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.peek() != '{' || s.depth >= maxFastDepth {
		return false
	}
	s.i++
	s.depth++
	defer func() { s.depth-- }()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// value skips one value and returns its text.
func (s *scanner) value() ([]byte, bool) {
	s.ws()
	start := s.i
	ok := s.skip()
	return s.b[start:s.i], ok
}

// skip skips one value, checking its syntax.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		return s.array()
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '-' || ('0' <= c && c <= '9'):
		return s.num()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}

func (s *scanner) array() bool {
	if s.depth >= maxFastDepth {
		return false
	}
	s.i++
	s.depth++
	defer func() { s.depth-- }()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !s.skip() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string; plain reports that it has no escape and only
// printable ASCII, so that its bytes are its value.
func (s *scanner) str() (v []byte, plain, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	// Most strings are plain: eight bytes at a time up to the first byte
	// that is not, which is most often the closing quote.
	b, i := s.b, s.i
	for {
		if i+8 > len(b) {
			for i < len(b) && plainByte[b[i]] {
				i++
			}
			break
		}
		if m := notPlain8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
		i += 8
	}
	if i < len(b) && b[i] == '"' {
		s.i = i + 1
		return b[start:i], true, true
	}
	// A string without escapes (text beyond ASCII, say): find its end at
	// once and check the bytes before it eight at a time.
	s.i = i
	if end := bytes.IndexByte(b[i:], '"'); end >= 0 && bytes.IndexByte(b[i:i+end], '\\') < 0 {
		ctl, high := classify8(b[i : i+end])
		if ctl {
			return nil, false, false
		}
		s.i = i + end + 1
		return b[start : i+end], !high, true
	}
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		if plainByte[c] {
			s.i++
			continue
		}
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], plain, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			plain = false
			if !s.escape() {
				return nil, false, false
			}
			continue
		case c >= 0x80:
			plain = false
		}
		s.i++
	}
	return nil, false, false
}

// notPlain8 flags the bytes of the word x (read little-endian) that a
// plain string cannot hold as they are: the quote, the backslash, a control
// byte (below 0x20) or one of 0x80 or more. Each test is the "haszero" or
// "hasless" of Bit Twiddling Hacks, whose lowest flag is always exact, so
// the lowest flag of the result is the first such byte.
func notPlain8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (x-ones*0x20)&^x | x) & highs
}

// classify8 reports whether b holds a control byte (below 0x20) and
// whether it holds a byte of 0x80 or more, eight bytes at a time: for a
// word x, (x - 0x20…20) &^ x has a high bit set if and only if some byte of
// x is below 0x20 (the "hasless" test of Bit Twiddling Hacks).
func classify8(b []byte) (ctl, high bool) {
	const highs, spaces = 0x8080808080808080, 0x2020202020202020
	var lows, tops uint64
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		lows |= (x - spaces) &^ x
		tops |= x
		b = b[8:]
	}
	ctl, high = lows&highs != 0, tops&highs != 0
	for _, c := range b {
		ctl = ctl || c < 0x20
		high = high || c >= 0x80
	}
	return ctl, high
}

func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// plainString reads a string the fast path can keep as it is.
func (s *scanner) plainString() ([]byte, bool) {
	v, plain, ok := s.str()
	return v, ok && plain
}

// stringField reads a string field into dst; null leaves it empty.
func (s *scanner) stringField(dst *string) bool {
	if s.null() {
		return true
	}
	v, ok := s.plainString()
	*dst = s.intern(v)
	return ok
}

func (s *scanner) boolean(dst *bool) bool {
	switch {
	case s.null():
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		*dst, s.i = true, s.i+4
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		*dst, s.i = false, s.i+5
		return true
	}
	return false
}

// num skips a number, checking its grammar.
func (s *scanner) num() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// number reads a number field into store and points dst at it; null
// leaves dst unset.
func (s *scanner) number(dst **float64, store *float64) bool {
	if s.null() {
		return true
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return false
	}
	start := s.i
	if !s.num() {
		return false
	}
	f, err := parseFloat(s.b[start:s.i])
	*store = f
	*dst = store
	return err == nil
}

// id reads a message id: a string, an integer, or null (no id).
func (s *scanner) id() (string, bool) {
	switch c := s.peek(); {
	case s.null():
		return "", true
	case c == '"':
		v, ok := s.plainString()
		return s.intern(v), ok
	case c == '-' || ('0' <= c && c <= '9'):
		start := s.i
		if !s.num() {
			return "", false
		}
		v := s.b[start:s.i]
		_, err := strconv.ParseInt(string(v), 10, 64)
		return s.intern(v), err == nil
	}
	return "", false
}

// token reads a progress token or request id as canonical text: a
// string's contents or a number's text; set reports that it was not null.
func (s *scanner) token(dst *string, set *bool) bool {
	switch c := s.peek(); {
	case s.null():
		return true
	case c == '"':
		v, ok := s.plainString()
		*dst, *set = s.intern(v), true
		return ok
	case c == '-' || ('0' <= c && c <= '9'):
		start := s.i
		ok := s.num()
		*dst, *set = s.intern(s.b[start:s.i]), true
		return ok
	}
	return false
}

// parseFloat is strconv.ParseFloat, made quick for the small non-negative
// integers progress numbers are: below 2^53 they convert exactly.
func parseFloat(b []byte) (float64, error) {
	if len(b) > 0 && len(b) <= 15 {
		var n uint64
		for _, c := range b {
			if c < '0' || c > '9' {
				return strconv.ParseFloat(string(b), 64)
			}
			n = n*10 + uint64(c-'0')
		}
		return float64(n), nil
	}
	return strconv.ParseFloat(string(b), 64)
}
