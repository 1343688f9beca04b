//go:build linux

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the upstream in its own process group, so SIGTERM reaches the
// children that npx and shells spawn. If mcpgate dies, even by SIGKILL, the kernel
// sends the upstream SIGTERM (PR_SET_PDEATHSIG), and it sees EOF on stdin: a server
// that ignores EOF no longer outlives the gateway.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

func terminate(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }
func kill(cmd *exec.Cmd)      { signalGroup(cmd, syscall.SIGKILL) }

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}
