package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	timeoutErr := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	resetErr := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name   string
		close  Close
		kind   ActionKind
		class  string
		resume string
		gap    *Gap
	}{
		{"reset", Close{Err: resetErr, LastEventID: "7"}, Reconnect, "reset", "7", nil},
		{"eof", Close{Err: io.EOF, LastEventID: "7"}, Reconnect, "eof", "7", nil},
		{"unexpected eof", Close{Err: fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), LastEventID: "7"}, Reconnect, "eof", "7", nil},
		{"net timeout", Close{Err: timeoutErr, LastEventID: "7"}, Reconnect, "timeout", "7", nil},
		{"read timeout", Close{Err: fmt.Errorf("%w: %w", ErrSilent, context.Canceled), LastEventID: "7"}, Reconnect, "timeout", "7", nil},
		{"other transport error", Close{Err: errors.New("tls: bad record"), LastEventID: "s_3"}, Reconnect, "error", "s_3", nil},
		{"500", Close{Status: 500, LastEventID: "7"}, Reconnect, "status_500", "7", nil},
		{"502", Close{Status: 502, LastEventID: "7"}, Reconnect, "status_502", "7", nil},
		{"503", Close{Status: 503, LastEventID: "7"}, Reconnect, "status_503", "7", nil},
		{"404", Close{Status: 404, LastEventID: "7"}, Reinitialize, "status_404", "", nil},
		{"404 without cursor", Close{Status: 404}, Reinitialize, "status_404", "", nil},
		{
			"410 with head", Close{Status: 410, LastEventID: "7", Body: []byte(`{"error":"resume_window_exceeded","last_event_id":7,"oldest_retained_id":40,"head_event_id":52}`)},
			ReconnectAtHead, "status_410", "52", &Gap{From: "7", To: "52", Reason: "resume_window_exceeded"},
		},
		{
			"410 naming the earliest honourable cursor", Close{Status: 410, LastEventID: "7", Body: []byte(`{"error":"resume_window_exceeded","last_event_id":7,"oldest_retained_id":40,"head_event_id":52,"resume_event_id":39}`)},
			ReconnectAtHead, "status_410", "39", &Gap{From: "7", To: "39", Reason: "resume_window_exceeded"},
		},
		{"410 with resume 0 falls back to head", Close{Status: 410, LastEventID: "7", Body: []byte(`{"head_event_id":52,"resume_event_id":0}`)}, ReconnectAtHead, "status_410", "52", &Gap{From: "7", To: "52", Reason: "status_410"}},
		{"410 with string head", Close{Status: 410, LastEventID: "a_1", Body: []byte(`{"head_event_id":"a_9"}`)}, ReconnectAtHead, "status_410", "a_9", &Gap{From: "a_1", To: "a_9", Reason: "status_410"}},
		{"410 without head", Close{Status: 410, LastEventID: "7", Body: []byte(`{"error":"gone"}`)}, GiveUp, "status_410", "", &Gap{From: "7", Reason: "gone"}},
		{"410 plain text", Close{Status: 410, LastEventID: "7", Body: []byte("gone")}, GiveUp, "status_410", "", &Gap{From: "7", Reason: "status_410"}},
		{"409 with head", Close{Status: 409, LastEventID: "7", Body: []byte(`{"error":"evicted","head_event_id":12}`)}, ReconnectAtHead, "status_409", "12", &Gap{From: "7", To: "12", Reason: "evicted"}},
		{"409 stream attached: surfaced, not retried", Close{Status: 409, LastEventID: "7", Body: []byte(`{"error":"stream_attached"}`)}, GiveUp, "status_409", "", &Gap{From: "7", Reason: "stream_attached"}},
		{"409 attached no cursor", Close{Status: 409, Body: []byte(`{"error":"stream_attached"}`)}, GiveUp, "status_409", "", &Gap{Reason: "stream_attached"}},
		{"409 plain", Close{Status: 409, LastEventID: "7"}, GiveUp, "status_409", "", &Gap{From: "7", Reason: "status_409"}},
		{"close event", Close{CloseEvent: true, LastEventID: "7"}, Stop, "close_event", "", nil},
		{"close event no cursor", Close{CloseEvent: true}, Stop, "close_event", "", nil},
		{"400", Close{Status: 400, LastEventID: "7"}, GiveUp, "status_400", "", nil},
		{"403", Close{Status: 403, LastEventID: "7"}, GiveUp, "status_403", "", nil},
		{"202", Close{Status: 202, LastEventID: "7"}, GiveUp, "status_202", "", nil},
		{"reset no cursor", Close{Err: resetErr}, GiveUp, "reset", "", nil},
		{"eof no cursor", Close{Err: io.EOF}, GiveUp, "eof", "", nil},
		{"503 no cursor", Close{Status: 503}, GiveUp, "status_503", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			act := Classify(tc.close)
			assert.Equal(t, tc.kind, act.Kind, "action (reason %q)", act.Reason)
			assert.Equal(t, tc.class, tc.close.Class())
			assert.Equal(t, tc.resume, act.LastEventID)
			assert.Equal(t, tc.gap, act.Gap)
			if act.Kind == GiveUp {
				assert.NotEmpty(t, act.Reason)
			}
		})
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(410, []byte(`{"head_event_id":5,"error":"resume_window_exceeded"}`), "3")
	f.Add(409, []byte(`{"error":"stream_attached"}`), "")
	f.Add(409, []byte(`{"head_event_id":null}`), "1")
	f.Add(0, []byte(nil), "a_1")
	f.Fuzz(func(t *testing.T, status int, body []byte, last string) {
		c := Close{Status: status, Body: body, LastEventID: last}
		if status == 0 {
			c.Err = io.EOF
		}
		act := Classify(c)
		require.NotZero(t, act.Kind)
		switch act.Kind {
		case Reconnect:
			require.Equal(t, last, act.LastEventID)
			require.NotEmpty(t, last)
		case ReconnectAtHead:
			require.NotNil(t, act.Gap)
			require.NotEmpty(t, act.LastEventID)
			require.Equal(t, act.LastEventID, act.Gap.To)
		case GiveUp:
			require.NotEmpty(t, act.Reason)
		}
	})
}
