package catalog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// described is every target's name, role and options, for the tests that
// hold of all of them.
type described struct {
	name, role string
	options    func() targets.Options
	protocols  []string
}

func all() []described {
	var out []described
	for _, s := range Servers() {
		out = append(out, described{s.Name, "server", s.Options, s.Protocols})
	}
	for _, c := range Clients() {
		out = append(out, described{c.Name, "client", c.Options, c.Protocols})
	}
	return out
}

func TestNamesAreUniqueAndTheDefaultsListed(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range all() {
		key := d.role + " " + d.name
		assert.False(t, seen[key], "%s is listed once", key)
		seen[key] = true
		for _, p := range d.protocols {
			assert.Contains(t, append(mcp.Versions, mcp.Version20260728), p, "%s speaks a revision there is", key)
		}
		got, ok := Server(d.name)
		if d.role == "server" {
			require.True(t, ok)
			assert.Equal(t, d.name, got.Name)
		}
	}
	_, ok := Server(DefaultServer)
	assert.True(t, ok, "the default server is a target")
	_, ok = Client(DefaultClient)
	assert.True(t, ok, "the default client is a target")
	_, ok = Client("clever")
	assert.False(t, ok)
}

// TestDefaultsAreValidOrNameWhatIsMissing: what an experiment leaves out
// is valid, except what a target cannot do without (a program, an image),
// which is named.
func TestDefaultsAreValidOrNameWhatIsMissing(t *testing.T) {
	for _, d := range all() {
		t.Run(d.role+" "+d.name, func(t *testing.T) {
			err := d.options().Validate()
			if d.name != targets.Command && d.name != targets.Image {
				assert.NoError(t, err)
				return
			}
			problems := field.All(err)
			require.Len(t, problems, 1)
			assert.Contains(t, []string{"command", "image"}, problems[0].Field)
			assert.EqualError(t, problems[0].Err, "is required when "+d.role+".target is "+d.name)
		})
	}
}

// TestOptionsAreOneSchema: every setting is named alike in an experiment
// file (yaml) and in the agent's configuration (json), and is data.
func TestOptionsAreOneSchema(t *testing.T) {
	var check func(t *testing.T, typ reflect.Type)
	check = func(t *testing.T, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			assert.NotEmpty(t, y, "%s.%s has a yaml name", typ.Name(), f.Name)
			assert.Equal(t, y, j, "%s.%s: one name in the file and in the configuration", typ.Name(), f.Name)
			assert.NotContains(t, []reflect.Kind{reflect.Func, reflect.Chan, reflect.Interface}, f.Type.Kind(), "%s.%s is data", typ.Name(), f.Name)
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[dur.Duration]() {
				check(t, f.Type)
			}
		}
	}
	for _, d := range all() {
		t.Run(d.role+" "+d.name, func(t *testing.T) { check(t, reflect.TypeOf(d.options())) })
	}
}

// TestScaledIsACopyWithEveryDurationScaled: Scaled leaves the options as
// the experiment wrote them, and scales each duration, a 0 that stands for
// a default by the default's value.
func TestScaledIsACopyWithEveryDurationScaled(t *testing.T) {
	for _, d := range all() {
		t.Run(d.role+" "+d.name, func(t *testing.T) {
			o := d.options()
			before := reflect.ValueOf(o).Elem().Interface()
			s := o.Scaled(0.5)
			assert.NotSame(t, o, s, "a copy")
			assert.Equal(t, before, reflect.ValueOf(o).Elem().Interface(), "the original is left as written")
			assert.Equal(t, reflect.TypeOf(o), reflect.TypeOf(s), "of the same type")
			forEachDuration(reflect.ValueOf(o).Elem(), reflect.ValueOf(s).Elem(), func(written, scaled dur.Duration) {
				if written != 0 {
					assert.Equal(t, written/2, scaled)
				}
			})
		})
	}
}

func forEachDuration(a, b reflect.Value, f func(written, scaled dur.Duration)) {
	for i := range a.NumField() {
		switch fa, fb := a.Field(i), b.Field(i); {
		case !fa.CanInterface():
		case fa.Type() == reflect.TypeFor[dur.Duration]():
			f(fa.Interface().(dur.Duration), fb.Interface().(dur.Duration))
		case fa.Kind() == reflect.Struct:
			forEachDuration(fa, fb, f)
		}
	}
}

func TestAFixedAddressIsOnLoopback(t *testing.T) {
	tests := []struct{ listen, want string }{
		{"127.0.0.1:9000", ""},
		{"localhost:9000", ""},
		{"[::1]:9000", ""},
		{"10.0.0.1:9000", "must be on loopback"},
		{"127.0.0.1:0", "needs a port between 1 and 65535"},
		{"nine", `must be host:port, got "nine"`},
	}
	for _, tc := range tests {
		o := &CommandOptions{Command: []string{"./srv"}, Listen: tc.listen}
		err := o.Validate()
		if tc.want == "" {
			assert.NoError(t, err, tc.listen)
			assert.Equal(t, []targets.Need{{What: targets.NeedFixedAddress, Field: "listen", Value: tc.listen, Wanted: true}}, o.Needs())
			continue
		}
		assert.ErrorContains(t, err, tc.want, tc.listen)
		assert.Equal(t, "listen", field.All(err)[0].Field)
	}
	assert.False(t, (&CommandOptions{Command: []string{"x"}}).Needs()[0].Wanted, "a free port needs nothing")
}

func TestProgramsAndImages(t *testing.T) {
	p, setting := (&CommandOptions{Command: []string{"./bin/srv", "-v"}}).Program()
	assert.Equal(t, []string{"./bin/srv", "command[0]"}, []string{p, setting})
	p, _ = (&ClientCommandOptions{Command: []string{"client"}}).Program()
	assert.Equal(t, "client", p)
	assert.Equal(t, "me/srv:1", (&ImageOptions{Image: "me/srv:1"}).ContainerImage())

}
