package targets

// Options is one target's settings as an experiment's server: or client:
// block states them, at real-world scale: an exported struct of data whose
// yaml and json tags are the schema, as a fault's params are. The target's
// description makes a value holding the defaults; a loader decodes the
// block over it, strictly (a key the struct lacks is an error), and
// validates it once. The runner hands the value, at run scale, to the
// agent that runs the target, which decodes it from JSON into the same
// type.
type Options interface {
	// Validate checks the options. Each problem is a *field.Error
	// (package internal/field) naming the setting as the file spells it
	// ("retention_events", "backoff.max"), joined when there are several.
	Validate() error
	// Scaled returns a copy at run scale: every duration multiplied by
	// the time scale f (a duration of 0 that stands for a default takes
	// the default first, which scales like any other).
	Scaled(f float64) Options
}

// Server describes a server target: what an experiment may ask of it,
// declared by the target, so that the loader and the runner ask instead of
// keeping lists of their own.
type Server struct {
	// Name is server.target.
	Name string
	// Options returns a new value of the target's options holding their
	// defaults.
	Options func() Options
	// Protocols are the revisions it speaks, oldest first.
	Protocols []string
	// Unspoken says why it does not speak the revisions it lacks, for an
	// experiment that asks for one ("" for the plain fact).
	Unspoken string
	// TaskModes are the server.tasks modes it runs besides off.
	TaskModes []string
	// Tools are the tools it serves; nil for the tools of the user's own
	// server, whatever their names.
	Tools []string
	// Controls are the control endpoint's actions it answers (expire,
	// terminate, drop_tasks); nil when that is not known (a server of the
	// user's, whose faults then fail at run time if it does not).
	Controls []string
	// Refusal and Exclusive phrase the refusal of a setting the
	// experiment gave the wrong target, {target} standing for the target
	// it named. Refusal answers a setting other targets take and this one
	// does not ("" says the target does not take it and lists what it
	// takes); Exclusive answers a setting only this target takes, given to
	// another ("" says only this target has it).
	Refusal, Exclusive string
}

// Client describes a client target, as Server does a server target.
type Client struct {
	// Name is client.target.
	Name string
	// Options returns a new value of the target's options holding their
	// defaults.
	Options func() Options
	// Protocols are the revisions it can be told to speak
	// (client.protocol), oldest first; none for a client that speaks what
	// it speaks (a program of the user's).
	Protocols []string
	// Unspoken says why it does not speak the revisions it lacks.
	Unspoken string
	// TaskModes are the client.tasks modes it speaks besides off.
	TaskModes []string
	// Refusal and Exclusive: as for Server.
	Refusal, Exclusive string
	// OneEndpoint says it is given one MCP endpoint: its calls cannot be
	// dealt over several proxy agents.
	OneEndpoint bool
	// Records is the file the client agent leaves in its state folder for
	// the checker: the client's history, or how a program of the user's
	// ended.
	Records string
}

// Need is something a target's options need of the run, for a loader to
// check against the runtime and the rest of the experiment before
// anything starts.
type Need struct {
	// What is needed: NeedImage, NeedFixedAddress, or a program the
	// runner starts beside the agents (NeedRedis).
	What string
	// Field is the setting that asks for it ("event_store"); "target" for
	// the target itself.
	Field string
	// Value is the setting's value, and Wanted whether that value asks
	// for it: a need a setting could ask for is listed either way, so that
	// a fault on a program nobody asked for can say which setting would.
	Value  string
	Wanted bool
}

// What a target may need of the run.
const (
	// NeedImage: the target runs a container image in the agent's place.
	NeedImage = "image"
	// NeedFixedAddress: the server listens on a fixed loopback address.
	NeedFixedAddress = "fixed_address"
	// NeedRedis: a Redis server the runner starts, which replicas share.
	NeedRedis = "redis"
)

// Needer is implemented by options that need something of the run.
type Needer interface {
	Needs() []Need
}

// Commanded is implemented by the options of a target that runs a program
// of the user's: the agent starts it, a runtime that runs agents in
// containers copies it in, and `chaosrun run` checks it can be run.
type Commanded interface {
	// Program is the program as the options name it, and Field the
	// setting that names it ("command[0]").
	Program() (program, field string)
}

// Imaged is implemented by the options of a target that runs a container
// image of the user's in the agent's place.
type Imaged interface {
	ContainerImage() string
}
