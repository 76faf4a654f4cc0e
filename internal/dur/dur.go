// Package dur is the duration type of experiment files: written as Go
// duration strings ("90s", "4m", "1h30m"), kept at real-world scale in the
// file, and multiplied by the experiment's time_scale when a run is planned.
package dur

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a non-negative real-world duration read from YAML or JSON.
type Duration time.Duration

// Parse reads a Go duration string. Negative durations are an error; a bare
// 0 is accepted for zero.
func Parse(s string) (Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use forms like 500ms, 90s, 4m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(d), nil
}

// D is the duration as a time.Duration, unscaled.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Scale multiplies the duration by a time scale.
func (d Duration) Scale(f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML accepts a duration string or the integer 0. Its errors
// start with "line N column C:", so a loader can point at the value.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d column %d: a duration must be a string like 90s", n.Line, n.Column)
	}
	v, err := Parse(n.Value)
	if err != nil {
		return fmt.Errorf("line %d column %d: %w", n.Line, n.Column, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string like 90s")
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ScaleAll multiplies by f every Duration in the struct that v points to,
// and in the structs it holds by value: the one way a part's settings are
// put at run scale, so a duration setting added to them scales without
// more code. Pointers, slices and maps are not followed (a copy of the
// struct would share them). It panics if v is not a pointer to a struct.
func ScaleAll(v any, f float64) {
	scaleStruct(reflect.ValueOf(v).Elem(), f)
}

var durationType = reflect.TypeFor[Duration]()

func scaleStruct(v reflect.Value, f float64) {
	for i := range v.NumField() {
		fv := v.Field(i)
		switch {
		case !fv.CanSet():
		case fv.Type() == durationType:
			fv.SetInt(int64(Duration(fv.Int()).Scale(f)))
		case fv.Kind() == reflect.Struct:
			scaleStruct(fv, f)
		}
	}
}
