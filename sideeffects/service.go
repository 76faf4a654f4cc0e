package sideeffects

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Limits on one POST /records request.
const (
	// MaxBodyBytes bounds a request body; a larger one is answered 413.
	MaxBodyBytes = 8 << 20
	// MaxBatch bounds the records of one request.
	MaxBatch = 10000
)

// shutdownGrace bounds how long [Serve] waits for in-flight requests.
const shutdownGrace = 5 * time.Second

// postResponse is the body of a successful POST /records: one entry per
// record sent, in order.
type postResponse struct {
	Stored []storedRef `json:"stored"`
}

type storedRef struct {
	ID        string `json:"id"`
	N         int64  `json:"n"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// errorResponse is the body of every non-200 answer.
type errorResponse struct {
	Error string `json:"error"`
}

// NewService returns the ledger's HTTP API over store:
//
//	POST /records   one JSON record, or a JSON array of up to MaxBatch records.
//	                Every record is validated first; if any is invalid, or the
//	                body is malformed or has unknown fields, the answer is 400
//	                with {"error": reason} and nothing is stored. Otherwise the
//	                answer is 200 with {"stored":[{"id","n","duplicate"}]},
//	                sent only once every record is durable. A body over
//	                MaxBodyBytes is answered 413; a closed or failed store 503.
//	GET  /records   the export, ledger.jsonl (one record per line, N order).
//	GET  /healthz   200 "ok".
//
// A record's n is assigned by the ledger; any n sent is ignored.
func NewService(store *Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /records", func(w http.ResponseWriter, r *http.Request) { post(store, w, r) })
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jsonl")
		_ = store.Export(w) // the client sees a short body if the connection fails
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

func post(store *Store, w http.ResponseWriter, r *http.Request) {
	recs, err := decodeRecords(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorResponse{
			Error: fmt.Sprintf("body larger than %d bytes", tooBig.Limit)})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorResponse{Error: err.Error()})
		return
	}
	stored, err := store.AppendAll(r.Context(), recs)
	switch {
	case errors.Is(err, ErrInvalid):
		writeJSON(w, http.StatusBadRequest, errorResponse{Error: err.Error()})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: err.Error()})
		return
	}
	resp := postResponse{Stored: make([]storedRef, len(stored))}
	for i, s := range stored {
		resp.Stored[i] = storedRef{ID: s.Record.ID, N: s.Record.N, Duplicate: s.Duplicate}
	}
	writeJSON(w, http.StatusOK, resp)
}

// decodeRecords parses and validates a POST body: one record or an array.
func decodeRecords(body io.Reader) ([]Record, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, errors.New("body must be a JSON record or a JSON array of records")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var recs []Record
	if trimmed[0] == '[' {
		err = dec.Decode(&recs)
	} else {
		recs = make([]Record, 1)
		err = dec.Decode(&recs[0])
	}
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON: data after the record")
	}
	return recs, validateBatch(recs)
}

func validateBatch(recs []Record) error {
	switch {
	case len(recs) == 0:
		return errors.New("no records")
	case len(recs) > MaxBatch:
		return fmt.Errorf("%d records; at most %d per request", len(recs), MaxBatch)
	}
	for i := range recs {
		recs[i].N = 0
		if err := recs[i].Validate(); err != nil {
			if len(recs) == 1 {
				return err
			}
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // nothing to do if the client is gone
}

// Serve answers the ledger API for store on ln until ctx is done, then shuts
// the server down, letting requests in flight finish (bounded), and returns
// nil. It does not close the store. An error from the listener is returned
// at once.
func Serve(ctx context.Context, ln net.Listener, store *Store) error {
	srv := &http.Server{Handler: NewService(store), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ledger serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("ledger shutdown: %w", err)
	}
	<-errc
	return nil
}
