package memifnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// The agent's process on a node, as the host sees it: its pid (the
// node's containerd runs in the host's pid namespace), to read its
// resources in /proc or to kill it as a crash would.

// AgentPIDOn returns the pid of the agent's container on node: the
// DaemonSet's running pod there, its container's task in the node's
// containerd.
func (n *Node) AgentPIDOn(ctx context.Context, node cluster.NodeHost) (int, error) {
	pod, err := n.AgentPodOn(ctx, node.Name())
	if err != nil {
		return 0, err
	}
	id, err := agentContainerID(pod)
	if err != nil {
		return 0, err
	}
	out, err := node.Ctr(ctx, "tasks", "ls")
	if err != nil {
		return 0, fmt.Errorf("memifnode: %w", err)
	}
	return taskPID(out, id)
}

// agentContainerID is the containerd ID of the agent pod's running
// container.
func agentContainerID(pod *v1.Pod) (string, error) {
	for _, status := range pod.Status.ContainerStatuses {
		if status.State.Running != nil && status.ContainerID != "" {
			return strings.TrimPrefix(status.ContainerID, "containerd://"), nil
		}
	}
	return "", fmt.Errorf("memifnode: agent pod %s on %s has no running container", pod.Name, pod.Spec.NodeName)
}

// taskPID reads the pid of the RUNNING task id from `ctr tasks ls`
// output (TASK PID STATUS).
func taskPID(out, id string) (int, error) {
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) == 3 && fields[0] == id && fields[2] == "RUNNING" {
			pid, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, fmt.Errorf("memifnode: ctr tasks ls: task %s has pid %q", id, fields[1])
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("memifnode: ctr tasks ls lists no running task %s", id)
}

// AgentRestarts is the restart count of the agent's container on node
// (kubelet's, in the pod's status).
func (n *Node) AgentRestarts(ctx context.Context, node string) (int32, error) {
	pod, err := n.AgentPodOn(ctx, node)
	if err != nil {
		return 0, err
	}
	var restarts int32
	for _, status := range pod.Status.ContainerStatuses {
		restarts += status.RestartCount
	}
	return restarts, nil
}

// KillAgentOn kills the agent's process on node with SIGKILL, as a crash
// would; kubelet starts its container again. It returns the container's
// restart count before the kill, for AgentRestartedOn.
func (n *Node) KillAgentOn(ctx context.Context, node cluster.NodeHost) (int32, error) {
	restarts, err := n.AgentRestarts(ctx, node.Name())
	if err != nil {
		return 0, err
	}
	pid, err := n.AgentPIDOn(ctx, node)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("memifnode: kill the agent (pid %d) on %s: %w", pid, node.Name(), err)
	}
	return restarts, nil
}

// AgentRestartedOn returns nil once the agent's container on node has
// restarted more often than before and its pod is Ready.
func (n *Node) AgentRestartedOn(ctx context.Context, node string, before int32) error {
	pod, err := n.AgentPodOn(ctx, node)
	if err != nil {
		return err
	}
	var restarts int32
	for _, status := range pod.Status.ContainerStatuses {
		restarts += status.RestartCount
	}
	if restarts <= before {
		return fmt.Errorf("agent pod %s on %s: %d restarts, want more than %d", pod.Name, node, restarts, before)
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == v1.PodReady && condition.Status == v1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("agent pod %s on %s restarted but not Ready: %v", pod.Name, node, pod.Status.Conditions)
}
