package agentside

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Keeper serves the experiment folder Root over HTTP:
//
//	PUT    /dirs/{path...}   make the folder (and its parents), owned by Owner
//	PUT    /files/{path...}  write the body to the file, owned by Owner
//	GET    /files/{path...}  the file
//	GET    /tar/{path...}    the folder as a tar archive, entries relative to it
//	DELETE /                 remove Root and everything in it
//
// Paths are relative to Root and may not leave it.
type Keeper struct {
	// Root is the experiment's folder; PUT /dirs makes it when missing.
	Root string
	// UID and GID own what the keeper makes, so that an agent running as
	// that user writes in its folder; negative leaves the keeper's own.
	UID, GID int
}

// Handler is the keeper's HTTP API.
func (k *Keeper) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /dirs/{path...}", k.makeDir)
	mux.HandleFunc("PUT /files/{path...}", k.writeFile)
	mux.HandleFunc("GET /files/{path...}", k.readFile)
	mux.HandleFunc("GET /tar/{path...}", k.tarDir)
	mux.HandleFunc("DELETE /{$}", k.remove)
	return mux
}

// local returns the request's path under Root, or answers 400.
func (k *Keeper) local(w http.ResponseWriter, r *http.Request) (string, bool) {
	rel := r.PathValue("path")
	if rel == "" {
		return k.Root, true
	}
	if !filepath.IsLocal(rel) {
		http.Error(w, fmt.Sprintf("%q is not a path inside the experiment's folder", rel), http.StatusBadRequest)
		return "", false
	}
	return filepath.Join(k.Root, filepath.FromSlash(rel)), true
}

func (k *Keeper) makeDir(w http.ResponseWriter, r *http.Request) {
	dir, ok := k.local(w, r)
	if !ok {
		return
	}
	if err := k.mkdirAll(dir); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mkdirAll makes dir and the folders above it up to Root, each owned by
// the agents' user.
func (k *Keeper) mkdirAll(dir string) error {
	if err := os.MkdirAll(k.Root, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(k.Root, dir)
	if err != nil {
		return err
	}
	cur := k.Root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := k.chown(cur); err != nil {
			return err
		}
	}
	return nil
}

func (k *Keeper) chown(path string) error {
	if k.UID < 0 && k.GID < 0 {
		return nil
	}
	return os.Lchown(path, k.UID, k.GID)
}

func (k *Keeper) writeFile(w http.ResponseWriter, r *http.Request) {
	path, ok := k.local(w, r)
	if !ok {
		return
	}
	err := k.mkdirAll(filepath.Dir(path))
	if err == nil {
		err = write(path, r.Body)
	}
	if err == nil {
		err = k.chown(path)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func write(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (k *Keeper) readFile(w http.ResponseWriter, r *http.Request) {
	path, ok := k.local(w, r)
	if !ok {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		http.Error(w, path+" is not a regular file", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, f)
}

func statusOf(err error) int {
	if errors.Is(err, fs.ErrNotExist) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// tarDir streams the folder's directories and regular files; a folder that
// does not exist is an empty archive (an agent that never started).
func (k *Keeper) tarDir(w http.ResponseWriter, r *http.Request) {
	dir, ok := k.local(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		return addEntry(tw, path, filepath.ToSlash(rel), d)
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		// The status is sent; a torn archive is the client's error.
		panic(http.ErrAbortHandler)
	}
}

func addEntry(tw *tar.Writer, path, name string, d fs.DirEntry) error {
	switch {
	case d.IsDir():
		return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	case !d.Type().IsRegular():
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	// A file still growing is cut at the size it had when it was opened.
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: info.Size(), ModTime: info.ModTime(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, io.LimitReader(f, info.Size()))
	return err
}

func (k *Keeper) remove(w http.ResponseWriter, _ *http.Request) {
	if err := os.RemoveAll(k.Root); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
