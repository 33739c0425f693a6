package e2e

import (
	"os/exec"
	"syscall"
)

func newProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// stopProcessGroup sends SIGTERM to the command's whole process group (bash and what it
// started), so a graceful stop reaches the server itself.
func stopProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}
