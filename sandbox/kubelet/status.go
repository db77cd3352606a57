package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podState is what a pod worker knows about its pod.
type podState struct {
	podIP      string
	startTime  metav1.Time
	containers []corev1.ContainerStatus
	// final is set once no container will run again.
	final bool
}

// podStatus returns base (the status in the API, which carries the
// scheduler's conditions and the QOS class) with the fields a kubelet owns
// replaced by what st says.
func podStatus(base corev1.PodStatus, st podState, now metav1.Time) corev1.PodStatus {
	s := *base.DeepCopy()
	s.Phase = podPhase(st.containers, st.final)
	s.HostIP, s.PodIP = nodeIP, st.podIP
	s.HostIPs = []corev1.HostIP{{IP: nodeIP}}
	s.PodIPs = []corev1.PodIP{{IP: st.podIP}}
	start := st.startTime
	s.StartTime = &start
	s.ContainerStatuses = make([]corev1.ContainerStatus, len(st.containers))
	var unready []string
	for i, c := range st.containers {
		s.ContainerStatuses[i] = *c.DeepCopy()
		if !c.Ready {
			unready = append(unready, c.Name)
		}
	}

	readyStatus, reason, message := corev1.ConditionTrue, "", ""
	switch {
	case s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed:
		readyStatus, reason = corev1.ConditionFalse, "PodCompleted"
	case len(unready) > 0:
		readyStatus, reason = corev1.ConditionFalse, "ContainersNotReady"
		message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	setCondition(&s, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", now)
	setCondition(&s, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	setCondition(&s, corev1.ContainersReady, readyStatus, reason, message, now)
	setCondition(&s, corev1.PodReady, readyStatus, reason, message, now)
	return s
}

// podPhase follows the kubelet: Pending while a container has not started,
// Running while any container runs or waits to restart, and once final,
// Succeeded if every container exited 0, else Failed.
func podPhase(containers []corev1.ContainerStatus, final bool) corev1.PodPhase {
	var notStarted, failed int
	for _, c := range containers {
		switch {
		case c.State.Terminated != nil:
			if c.State.Terminated.ExitCode != 0 {
				failed++
			}
		case c.State.Running == nil && c.LastTerminationState.Terminated == nil:
			notStarted++
		}
	}
	switch {
	case final && failed+notStarted > 0:
		return corev1.PodFailed
	case final:
		return corev1.PodSucceeded
	case notStarted > 0:
		return corev1.PodPending
	}
	return corev1.PodRunning
}

// setCondition sets a condition, keeping its transition time when its
// status does not change, and leaves conditions of other types alone.
func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now}
	for i := range s.Conditions {
		if s.Conditions[i].Type != t {
			continue
		}
		if s.Conditions[i].Status == status {
			c.LastTransitionTime = s.Conditions[i].LastTransitionTime
		}
		s.Conditions[i] = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// terminatedState is the state of a container run that exited with code.
func terminatedState(code int, started, finished metav1.Time) corev1.ContainerState {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: int32(code), Reason: reason, StartedAt: started, FinishedAt: finished,
	}}
}
