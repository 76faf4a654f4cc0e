package kube

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

func TestNamespaceNamesAreDNSLabels(t *testing.T) {
	tests := []struct{ experiment, want string }{
		{"double-charge-lb-idle", "chaosrun-double-charge-lb-idle-0a1b2c3d"},
		{"Double_Charge.LB idle", "chaosrun-double-charge-lb-idle-0a1b2c3d"},
		{"--", "chaosrun-experiment-0a1b2c3d"},
		{"gosdk-double-charge-naive.r12", "chaosrun-gosdk-double-charge-naive-r12-0a1b2c3d"},
		{strings.Repeat("very-long-name-", 10), ""},
		{"TestRuntime/subtest_with_a_slash", "chaosrun-testruntime-subtest-with-a-slash-0a1b2c3d"},
	}
	for _, tt := range tests {
		got := namespaceName(tt.experiment, "0a1b2c3d")
		assert.Empty(t, validation.IsDNS1123Label(got), "%q → %q", tt.experiment, got)
		assert.True(t, strings.HasSuffix(got, "-0a1b2c3d"), got)
		if tt.want != "" {
			assert.Equal(t, tt.want, got)
		}
	}
}

func TestLabelValuesAreValid(t *testing.T) {
	for _, s := range []string{"20261216-101500-a1b2c3", "gotest-ab12", "a/b:c", strings.Repeat("x", 70) + "-", "-x-"} {
		got := labelValue(s)
		assert.Empty(t, validation.IsValidLabelValue(got), "%q → %q", s, got)
		assert.NotEmpty(t, got)
	}
	assert.Equal(t, "20261216-101500-a1b2c3", labelValue("20261216-101500-a1b2c3"), "a run id is kept as it is")
}

func template() podTemplate {
	return podTemplate{namespace: "chaosrun-x-0a1b2c3d", image: "chaosrun:0123456789ab", node: "node-1", stateRoot: "/var/lib/chaosrun-kube",
		labels: map[string]string{LabelManaged: "1", LabelRun: "run-1", LabelExperiment: "x"}}
}

func TestAgentPodRunsTheAgentOnItsFolderAsAnUnprivilegedUser(t *testing.T) {
	spec := agent.Spec{Role: agent.RoleProxy, Port: 8474, PeerPorts: []int{8666}, Serves: true, Args: []string{"--share", "1"},
		Env: []string{"A=b=c"}, Clock: runclock.Start(), LedgerURL: "http://10.0.0.7:8080"}
	pod := template().agentPod("proxy-2", "proxy", spec)

	assert.Equal(t, "proxy-2", pod.Name)
	assert.Equal(t, "chaosrun-x-0a1b2c3d", pod.Namespace)
	assert.Equal(t, map[string]string{LabelManaged: "1", LabelRun: "run-1", LabelExperiment: "x", LabelRole: "proxy", LabelAgent: "proxy"}, pod.Labels)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy, "a restart is the runtime's: a new pod")
	assert.Equal(t, "node-1", pod.Spec.NodeName, "pinned to the keeper's node, where its folder is")
	assert.True(t, *pod.Spec.ShareProcessNamespace, "so that a signal from inside the pod reaches the agent")
	assert.False(t, *pod.Spec.AutomountServiceAccountToken)
	assert.False(t, *pod.Spec.EnableServiceLinks)
	assert.Equal(t, int64(StopGrace.Seconds()), *pod.Spec.TerminationGracePeriodSeconds)

	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "chaosrun:0123456789ab", c.Image)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	assert.Equal(t, []string{"/chaosrun"}, c.Command)
	assert.Equal(t, spec.CommandLine("/state", "0.0.0.0:8474"), c.Args)
	assert.Equal(t, []corev1.EnvVar{{Name: "A", Value: "b=c"}}, c.Env)
	assert.Equal(t, []int32{8474, 8666}, []int32{c.Ports[0].ContainerPort, c.Ports[1].ContainerPort})
	sc := c.SecurityContext
	assert.Equal(t, int64(AgentUID), *sc.RunAsUser)
	assert.True(t, *sc.RunAsNonRoot)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)

	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	require.NotNil(t, vols["state"].HostPath)
	assert.Equal(t, "/var/lib/chaosrun-kube/chaosrun-x-0a1b2c3d/proxy", vols["state"].HostPath.Path)
	assert.Equal(t, corev1.HostPathDirectory, *vols["state"].HostPath.Type, "the keeper made it, owned by the agent's user")
	require.NotNil(t, vols["tmp"].EmptyDir)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	assert.Equal(t, map[string]string{"state": StateDir, "tmp": "/tmp"}, mounts)
}

func TestAClientPodServesNothing(t *testing.T) {
	pod := template().agentPod("client-1", "client", agent.Spec{Role: agent.RoleClient})
	assert.Empty(t, pod.Spec.Containers[0].Ports)
	assert.NotContains(t, pod.Spec.Containers[0].Args, "--addr")
}

func TestKeeperPodMayOwnTheStateRootAndNothingMore(t *testing.T) {
	tm := template()
	tm.node = ""
	pod := tm.keeperPod()
	assert.Empty(t, pod.Spec.NodeName, "the scheduler places the keeper; every later pod follows it")
	c := pod.Spec.Containers[0]
	assert.Equal(t, []string{"agent", "keeper", "--addr", "0.0.0.0:8080", "--root", "/data/chaosrun-x-0a1b2c3d", "--owner", "65532:65532"}, c.Args)
	assert.Equal(t, int64(0), *c.SecurityContext.RunAsUser)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	assert.ElementsMatch(t, []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER"}, c.SecurityContext.Capabilities.Add)
	require.Len(t, pod.Spec.Volumes, 1)
	assert.Equal(t, "/var/lib/chaosrun-kube", pod.Spec.Volumes[0].HostPath.Path)
	assert.Equal(t, corev1.HostPathDirectoryOrCreate, *pod.Spec.Volumes[0].HostPath.Type)
	assert.Equal(t, keeperName, pod.Labels[LabelRole])
	assert.Empty(t, pod.Labels[LabelAgent], "no Service selects the keeper")
}

func TestServiceSelectsTheAgentOnEveryPortItServesPeers(t *testing.T) {
	svc := template().service("server-2", agent.Spec{Role: agent.RoleServer, Port: 8080, PeerPorts: []int{8080, 9000, 0}})
	assert.Equal(t, "server-2", svc.Name)
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	assert.Equal(t, map[string]string{LabelAgent: "server-2"}, svc.Spec.Selector)
	var ports []int32
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Port)
		assert.Equal(t, p.Port, p.TargetPort.IntVal)
		assert.Empty(t, validation.IsValidPortName(p.Name))
	}
	assert.Equal(t, []int32{8080, 9000}, ports, "each port once")
	assert.Equal(t, "1", svc.Labels[LabelManaged])
}

func TestCapabilitiesSayWhyEachMissingOneIsMissing(t *testing.T) {
	c := Capabilities()
	assert.Equal(t, Name, c.Runtime)
	assert.True(t, c.Pause, "SIGSTOP from inside the pod's shared process namespace")
	missing := map[string]bool{
		agent.CapImages: !c.Images, agent.CapPrograms: !c.Programs, agent.CapFixedAddresses: !c.FixedAddresses,
		agent.CapDaemons: len(c.Daemons) == 0, agent.CapPause: !c.Pause,
	}
	for capability, lacks := range missing {
		if lacks {
			assert.NotEmpty(t, c.Why[capability], capability)
		} else {
			assert.Empty(t, c.Why[capability], capability)
		}
	}
	assert.Zero(t, c.OpenFiles, "each pod has its own limit")
}

func TestTheURLLineIsToldFromLogLines(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"http://0.0.0.0:8080", true},
		{"http://[::]:8080", true},
		{"http://0.0.0.0:8081", false},
		{`time=2026-12-16T10:00:00Z level=INFO msg="listening" url=http://0.0.0.0:8080`, false},
		{"http://0.0.0.0:8080/mcp", false},
		{"https://0.0.0.0:8080", false},
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isURL(tt.line, 8080), tt.line)
	}
}

func TestAPodIsListedOnlyWhenReady(t *testing.T) {
	ready, notReady := true, false
	slice := func(pod string, r *bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: r},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}}}
	}
	lists := func(list []*discoveryv1.EndpointSlice, pod string) bool { return slices.Contains(readyPods(list), pod) }
	assert.True(t, lists([]*discoveryv1.EndpointSlice{slice("server-2", &ready)}, "server-2"))
	assert.True(t, lists([]*discoveryv1.EndpointSlice{slice("server-2", nil)}, "server-2"), "no condition means ready")
	assert.False(t, lists([]*discoveryv1.EndpointSlice{slice("server-2", &notReady)}, "server-2"))
	assert.False(t, lists([]*discoveryv1.EndpointSlice{slice("server-1", &ready)}, "server-2"), "the last pod is not the new one")
	assert.False(t, lists(nil, "server-2"))
}

func TestContainersThatCannotStartAreToldFromOnesThatAreStarting(t *testing.T) {
	for _, r := range []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "CreateContainerError"} {
		assert.True(t, cannotStart(r), r)
	}
	for _, r := range []string{"ContainerCreating", "PodInitializing", ""} {
		assert.False(t, cannotStart(r), r)
	}
}

// TestExecOutputTakesWritesFromTwoGoroutines: an exec's stdout and stderr
// are copied into one buffer at once (the race detector fails a plain
// bytes.Buffer here).
func TestExecOutputTakesWritesFromTwoGoroutines(t *testing.T) {
	out := &syncBuffer{}
	var wg sync.WaitGroup
	for _, s := range []string{"o", "e"} {
		wg.Go(func() {
			for range 100 {
				_, _ = out.Write([]byte(s))
			}
		})
	}
	wg.Wait()
	assert.Len(t, out.String(), 200)
}
