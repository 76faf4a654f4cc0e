package check

import (
	"fmt"
	"math"
	"strings"

	"github.com/chaosrun/chaosrun/targets/byo"
)

// ClientExitFile is the exit record of a client of the user's own, in an
// experiment's result folder.
const ClientExitFile = byo.ExitFile

// clientSurvived judges client_survived from the exit record of a client of
// the user's own: held when it exited 0 or was still running when the run
// told it to stop; violated when it exited with an error, or died by a
// signal the harness did not send, once a fault had been injected (a client
// killed by a fault is a finding, whatever it printed); not judged for
// chaosrun's own clients, which record their stops in their history.
func clientSurvived(in Input) Result {
	e := in.ClientExit
	var ev evidence
	switch {
	case e == nil:
		return Result{ID: ClientSurvived, Status: NotJudged,
			Summary: "no exit record: the client is chaosrun's own, whose history records how it stopped"}
	case e.Stopped:
		r := ev.result(ClientSurvived, true, fmt.Sprintf("the client was still running when the run ended, and was told to stop (%s)", e.Status))
		r.Account = AccountExit
		return r
	case e.Code == 0:
		r := ev.result(ClientSurvived, true, "the client exited 0"+at(e.TUS))
		r.Account = AccountExit
		return r
	}
	ev.add("%s: %s%s%s", citation{text: ClientExitFile, refs: []Ref{{File: RefExit}}}, e.Status, at(e.TUS), duringFault(in, e.TUS))
	for _, l := range e.Tail {
		ev.add("its output: %s", l)
	}
	r := ev.result(ClientSurvived, false, fmt.Sprintf("the client ended with an error: %s%s%s", e.Status, at(e.TUS), duringFault(in, e.TUS)))
	r.Account = AccountExit
	return r
}

// at renders " at T" for a time on the run's clock, or "" when unknown.
func at(us int64) string {
	if us == 0 {
		return ""
	}
	return " at " + seconds(us)
}

// duringFault says which fault's window (with BreakGrace) holds us.
func duringFault(in Input, us int64) string {
	if us == 0 {
		return ""
	}
	for i := range in.Faults {
		f := &in.Faults[i]
		end := f.EndUS
		if end < f.StartUS {
			end = math.MaxInt64
		} else {
			end += BreakGrace.Microseconds()
		}
		if f.Error == "" && f.StartUS <= us && us <= end {
			return ", during " + describeText(f)
		}
	}
	return ""
}

// exitedBeforeFaults says why the client's exit made the workload fail to
// run: it exited with an error before any fault was injected. "" when it
// did not.
func exitedBeforeFaults(in Input) string {
	e := in.ClientExit
	if e == nil || e.Stopped || e.Code == 0 || e.TUS == 0 {
		return ""
	}
	for _, f := range in.Faults {
		if f.Error == "" && f.StartUS <= e.TUS {
			return ""
		}
	}
	said := ""
	if len(e.Tail) > 0 {
		said = ": " + strings.Join(e.Tail, " | ")
	}
	return fmt.Sprintf("the client exited before any fault (%s%s)%s", e.Status, at(e.TUS), said)
}
