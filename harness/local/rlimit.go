package local

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// openFiles is the open-file limit the runtime asks for its agents. At
// 10,000 sessions the client holds a socket or two per session, the proxy
// two per connection at each of its edges, and the server one per
// connection: tens of thousands of descriptors in one process, beyond the
// usual hard limit of a shell or a container (often 20,000 or less).
const openFiles = 1 << 20

var raised struct {
	once  sync.Once
	limit syscall.Rlimit
	err   error
}

// raiseOpenFiles lifts the runner's RLIMIT_NOFILE, which every agent it
// starts inherits: the hard limit up to openFiles (bounded by the kernel's
// fs.nr_open) where the process may raise it (root, CAP_SYS_RESOURCE), and
// the soft limit to the hard one. It runs once and returns the limit in
// force; an error says why it is lower than asked, and is no failure: the
// agents run with what there is.
func raiseOpenFiles() (syscall.Rlimit, error) {
	raised.once.Do(func() {
		var lim syscall.Rlimit
		if raised.err = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); raised.err != nil {
			return
		}
		want := uint64(openFiles)
		if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
			if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				want = min(want, n)
			}
		}
		if lim.Max < want {
			up := syscall.Rlimit{Cur: want, Max: want}
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up); err == nil {
				lim = up
			} else {
				raised.err = err
			}
		}
		if lim.Cur < lim.Max {
			lim.Cur = lim.Max
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
				raised.err = err
			}
		}
		raised.err = errors.Join(raised.err, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &raised.limit))
	})
	return raised.limit, raised.err
}
