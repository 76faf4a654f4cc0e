package agent

import "context"

// Balancing is a Runtime that spreads requests over the agents of one role
// itself, in place of a balancer the runner starts (a Kubernetes Service
// selecting every server replica's pod). The runner asks for it by type
// assertion when the experiment's balancer is of kind service; a runtime
// that implements it says so in Capabilities.Services.
type Balancing interface {
	// Balance puts a balancer in front of every agent of b.Role started so
	// far and later, waits until it leads to b.Members of them, and
	// returns host:port as other agents reach it. The balancer lives
	// until the runtime's Close.
	Balance(ctx context.Context, b Balance) (string, error)
}

// Balance is one balancer a Balancing runtime makes.
type Balance struct {
	// Name names the balancer among the runtime's objects.
	Name string
	// Role is the role whose agents are the balancer's members.
	Role string
	// Port is the port every member serves its peers on (Spec.Port).
	Port int
	// Members is how many agents of Role the balancer must lead to before
	// Balance returns.
	Members int
	// Affinity keeps each peer's address on one member while it lives
	// (balance: source); false leaves the choice per connection to the
	// runtime.
	Affinity bool

	_ struct{} // keyed literals only: the balance grows
}
