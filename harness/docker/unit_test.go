package docker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// writeChunks writes s to a firstLine in pieces of size n and returns the
// line it sent and what it passed on.
func writeChunks(t *testing.T, s string, n int) (string, string) {
	t.Helper()
	line := make(chan string, 1)
	var rest bytes.Buffer
	w := &firstLine{line: line, rest: &rest}
	for b := []byte(s); len(b) > 0; b = b[min(n, len(b)):] {
		m, err := w.Write(b[:min(n, len(b))])
		require.NoError(t, err)
		require.Equal(t, min(n, len(b)), m)
	}
	select {
	case l := <-line:
		return l, rest.String()
	default:
		return "<none>", rest.String()
	}
}

func TestFirstLineSplitsTheURLFromTheRest(t *testing.T) {
	for name, tc := range map[string]struct{ in, line, rest string }{
		"url then output":  {"http://0.0.0.0:8080\nserving\n", "http://0.0.0.0:8080", "serving\n"},
		"crlf":             {"http://0.0.0.0:1\r\nx", "http://0.0.0.0:1", "x"},
		"no newline yet":   {"http://0.0.0.0:1", "<none>", ""},
		"empty first line": {"\nhttp://x\n", "", "http://x\n"},
		"overlong line":    {strings.Repeat("a", maxURLLine+10), strings.Repeat("a", maxURLLine+10), ""},
	} {
		for _, chunk := range []int{1, 3, 1 << 20} {
			line, rest := writeChunks(t, tc.in, chunk)
			if name == "overlong line" && chunk < len(tc.in) {
				assert.Len(t, line+rest, len(tc.in), name)
				continue
			}
			assert.Equal(t, tc.line, line, name)
			assert.Equal(t, tc.rest, rest, name)
		}
	}
}

func FuzzFirstLine(f *testing.F) {
	f.Add([]byte("http://0.0.0.0:8080\nserving\n"), uint8(3))
	f.Add([]byte("\r\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		n := int(chunk%64) + 1
		line, rest := writeChunks(t, string(in), n)
		i := bytes.IndexByte(in, '\n')
		if i < 0 || i > maxURLLine {
			return // no line, or one cut at the limit
		}
		assert.Equal(t, strings.TrimRight(string(in[:i]), "\r"), line)
		assert.Equal(t, string(in[i+1:]), rest)
	})
}

const hostMountinfo = `42 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:1 - ext4 /dev/vda rw
120 42 0:55 / /var/lib/docker/containers/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/mounts/shm rw - tmpfs shm rw
`

const containerMountinfo = `600 500 0:70 / / ro,relatime - overlay overlay rw
610 600 254:0 /var/lib/docker/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/resolv.conf /etc/resolv.conf rw - ext4 /dev/vda rw
611 600 254:0 /var/lib/docker/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/hostname /etc/hostname rw - ext4 /dev/vda rw
612 600 254:0 /var/lib/docker/containers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/hosts /etc/hosts rw - ext4 /dev/vda rw
`

func TestContainerIDsComeOnlyFromDockersEtcMounts(t *testing.T) {
	assert.Empty(t, containerIDs([]byte(hostMountinfo)), "a host that runs containers is not in one")
	assert.Equal(t, []string{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		containerIDs([]byte(containerMountinfo)))
	assert.Empty(t, containerIDs([]byte("garbage\n\n1 2 3\n")))
}

func FuzzContainerIDs(f *testing.F) {
	f.Add([]byte(containerMountinfo))
	f.Add([]byte(hostMountinfo))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, id := range containerIDs(in) {
			require.Regexp(t, `^[0-9a-f]{64}$`, id)
		}
	})
}

func TestNameFragment(t *testing.T) {
	for in, want := range map[string]string{
		"double-charge-lb-idle":              "double-charge-lb-idle",
		"TestRestart/graceful":               "testrestart-graceful",
		"":                                   "experiment",
		"--":                                 "experiment",
		strings.Repeat("x", 50):              strings.Repeat("x", 40),
		strings.Repeat("y", 39) + "-" + "zz": strings.Repeat("y", 39),
	} {
		assert.Equal(t, want, nameFragment(in), in)
	}
}

func TestAgentCommandLine(t *testing.T) {
	assert.Equal(t, []string{"agent", "server", "--state", "/state", "--addr", "0.0.0.0:8080", "--x"},
		agentArgs(agent.Spec{Role: "server", Serves: true, Port: 8080, Args: []string{"--x"}}))
	assert.Equal(t, []string{"agent", "client", "--state", "/state"}, agentArgs(agent.Spec{Role: "client"}))
	assert.Equal(t, map[string]string{"A": "1", "B": "x=y", "C": ""}, envMap([]string{"A=1", "B=x=y", "C"}))
}

func TestBuildImageRejectsADynamicBinary(t *testing.T) {
	_, err := BuildImage(t.Context(), "/bin/sh")
	require.ErrorContains(t, err, "CGO_ENABLED=0")
	_, err = BuildImage(t.Context(), filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
}

func TestProgramOfPlacesABringYourOwnProgram(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "srv.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 1\n"), 0o755))
	static := filepath.Join(dir, "static")
	build := exec.Command("go", "build", "-o", static, "./testdata/static")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Chdir(dir)
	tests := []struct {
		name     string
		program  string
		in, work string // where the program is in the container, and its working directory
		err      string
	}{
		{"none", "", "", "", ""},
		{"a bare name, from the image's PATH", "my-server", "", "", ""},
		{"an absolute path", static, static, "", ""},
		{"a relative path, under the working directory", "./static", ProgramDir + "/static", ProgramDir, ""},
		{"a relative path leaving it", "../" + filepath.Base(dir) + "/static", "", "", "must stay below the working directory"},
		{"a script", script, "", "", "not an ELF executable (a script needs an interpreter"},
		{"a dynamically linked binary", "/bin/sh", "", "", "dynamically linked, and the agent image holds no libraries"},
		{"nothing there", "./gone", "", "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := programOf(agent.Spec{Role: agent.RoleServer, Program: tc.program})
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.Contains(t, err.Error(), "server command "+tc.program)
				return
			}
			require.NoError(t, err)
			if tc.in == "" {
				assert.Nil(t, p, "nothing to copy")
				return
			}
			require.NotNil(t, p)
			assert.Equal(t, tc.in, p.in)
			assert.Equal(t, tc.program, p.host)
			assert.Equal(t, filepath.Dir(tc.in), p.dir, "the volume is mounted where the program is")
			assert.Equal(t, tc.work, p.workDir)
		})
	}
}
