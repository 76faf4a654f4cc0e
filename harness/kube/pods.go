package kube

import (
	"net"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// StateDir is where an agent's folder is mounted in its container.
const StateDir = "/state"

// AgentUID is the user agents run as: the docker runtime's image user
// (docker.AgentUser), which owns the folders the keeper makes.
const AgentUID = 65532

// containerName is the agent's container in its pod.
const containerName = "agent"

// The keeper's pod: it mounts the state root at keeperMount and listens
// on keeperPort.
const (
	keeperName  = "keeper"
	keeperMount = "/data"
	keeperPort  = 8080
)

// binary is the chaosrun binary in the agent image.
const binary = "/chaosrun"

// podTemplate is what every pod of an experiment shares.
type podTemplate struct {
	namespace string
	image     string
	labels    map[string]string // the experiment's: managed, run, experiment
	node      string            // "" lets the scheduler place the pod (the keeper)
	stateRoot string            // the node's folder of every experiment's state
}

func (t podTemplate) podLabels(extra map[string]string) map[string]string {
	l := make(map[string]string, len(t.labels)+len(extra))
	for k, v := range t.labels {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// agentFolder is the agent's folder on the node.
func (t podTemplate) agentFolder(alias string) string {
	return path.Join(t.stateRoot, t.namespace, alias)
}

// agentPod is incarnation name of the agent alias: its command line, its
// folder on the node mounted at StateDir, a private /tmp, the process
// namespace shared with the pod's infrastructure container (so a signal
// from inside reaches it), and a container that runs as AgentUID with
// every capability dropped on a read-only root.
func (t podTemplate) agentPod(name, alias string, spec agent.Spec) *corev1.Pod {
	var ports []corev1.ContainerPort
	for _, p := range servicePorts(spec) {
		ports = append(ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	directory := corev1.HostPathDirectory
	tmpSize := resource.MustParse("64Mi")
	pod := t.pod(name, map[string]string{LabelRole: spec.Role, LabelAgent: alias})
	pod.Spec.ShareProcessNamespace = ptr(true)
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(StopGrace.Seconds()))
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.agentFolder(alias), Type: &directory}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &tmpSize}}},
	}
	pod.Spec.Containers = []corev1.Container{{
		Name:            containerName,
		Image:           t.image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{binary},
		Args:            spec.CommandLine(StateDir, listenAddr(spec)),
		Env:             envVars(spec.Env),
		Ports:           ports,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "state", MountPath: StateDir},
			{Name: "tmp", MountPath: "/tmp"},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr(int64(AgentUID)),
			RunAsGroup:               ptr(int64(AgentUID)),
			RunAsNonRoot:             ptr(true),
			ReadOnlyRootFilesystem:   ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}}
	return pod
}

// keeperPod is the experiment's keeper: root, so that it can make folders
// for AgentUID and remove what agents wrote (CHOWN, DAC_OVERRIDE and FOWNER,
// every other capability dropped), with the node's state root mounted, made
// when missing.
func (t podTemplate) keeperPod() *corev1.Pod {
	orCreate := corev1.HostPathDirectoryOrCreate
	pod := t.pod(keeperName, map[string]string{LabelRole: keeperName})
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	pod.Spec.Volumes = []corev1.Volume{{Name: "root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.stateRoot, Type: &orCreate}}}}
	pod.Spec.Containers = []corev1.Container{{
		Name:            containerName,
		Image:           t.image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{binary},
		Args: []string{"agent", "keeper", "--addr", net.JoinHostPort("0.0.0.0", strconv.Itoa(keeperPort)),
			"--root", path.Join(keeperMount, t.namespace), "--owner", strconv.Itoa(AgentUID) + ":" + strconv.Itoa(AgentUID)},
		Ports:        []corev1.ContainerPort{{Name: "keeper", ContainerPort: keeperPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: "root", MountPath: keeperMount}},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr(int64(0)),
			ReadOnlyRootFilesystem:   ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"},
				Add: []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER"}},
		},
	}}
	return pod
}

// pod is a pod of the experiment that never restarts by itself (a restart
// is the runtime's: a new pod), holds no API token and gets no service
// environment variables.
func (t podTemplate) pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.namespace, Labels: t.podLabels(labels)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			NodeName:                     t.node,
			AutomountServiceAccountToken: ptr(false),
			EnableServiceLinks:           ptr(false),
		},
	}
}

// service is the ClusterIP Service of a serving agent: every port it
// serves its peers on, selecting the agent's pods.
func (t podTemplate) service(alias string, spec agent.Spec) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: alias, Namespace: t.namespace,
			Labels: t.podLabels(map[string]string{LabelRole: spec.Role, LabelAgent: alias})},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelAgent: alias},
			Ports:    servicePorts(spec),
		},
	}
}

// servicePorts are Spec.Port and Spec.PeerPorts, each once.
func servicePorts(spec agent.Spec) []corev1.ServicePort {
	var ports []corev1.ServicePort
	seen := map[int]bool{}
	for _, p := range append([]int{spec.Port}, spec.PeerPorts...) {
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		ports = append(ports, corev1.ServicePort{Name: "p" + strconv.Itoa(p), Port: int32(p),
			TargetPort: intstr.FromInt32(int32(p)), Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// listenAddr is where an agent listens in its pod.
func listenAddr(spec agent.Spec) string { return net.JoinHostPort("0.0.0.0", strconv.Itoa(spec.Port)) }

func envVars(env []string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
