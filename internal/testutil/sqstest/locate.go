package sqstest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// EnvDir names the launcher's directory (the repository's tools/fauxqs, with its
// node_modules installed), for test binaries that do not run inside the repository.
const EnvDir = "ROTA_FAUXQS_DIR"

// launcherRel is where the launcher sits in the repository.
const launcherRel = "tools/fauxqs"

// launcher is what it takes to start fauxqs: the node binary and the launcher's directory.
type launcher struct {
	node string
	dir  string
}

// requireLauncher finds the launcher, skipping t when node or fauxqs is missing, or
// failing it when CI=true or ROTA_REQUIRE_INTEGRATION=1: CI must never pass by skipping
// the SQS integration tests.
func requireLauncher(t testing.TB) launcher {
	t.Helper()
	l, err := findLauncher()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatalf("sqstest: %v (CI=true or ROTA_REQUIRE_INTEGRATION=1: SQS tests must not be skipped)", err)
		}
		t.Skipf("sqstest: %v", err)
	}
	return l
}

func findLauncher() (launcher, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		var err error
		if dir, err = launcherInRepository(); err != nil {
			return launcher{}, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "launch.mjs")); err != nil {
		return launcher{}, fmt.Errorf("no fauxqs launcher in %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "fauxqs", "package.json")); err != nil {
		return launcher{}, fmt.Errorf("fauxqs is not installed in %s; run scripts/test.sh (or npm ci in that directory)", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return launcher{}, errors.New("node is not on PATH; run scripts/test.sh, which installs Node.js")
	}
	return launcher{node: node, dir: dir}, nil
}

// launcherInRepository walks up from the working directory (a test runs in its package's
// directory) to the first directory that holds tools/fauxqs: the repository root, even
// from a nested module.
func launcherInRepository() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, launcherRel)
		if _, err := os.Stat(filepath.Join(candidate, "launch.mjs")); err == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s above %s; set %s", launcherRel, wd, EnvDir)
		}
	}
}
