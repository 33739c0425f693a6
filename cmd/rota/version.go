package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3". Empty, it
// comes from the build information (see buildVersion).
var version = ""

// buildVersion is the version this binary reports: the -ldflags value, else the module
// version `go install ...@v1.2.3` records, else the VCS revision of a build from a
// checkout ("devel-<12 hex>", "+dirty" for uncommitted changes), else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionFromBuildInfo(info)
}

func versionFromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if revision == "" {
		return "devel"
	}
	v := "devel-" + revision[:min(12, len(revision))]
	if dirty {
		v += "+dirty"
	}
	return v
}

// isVersionArg reports whether a first argument asks for the version.
func isVersionArg(arg string) bool {
	return arg == "--version" || arg == "-version" || arg == "-v"
}

func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota version")
		fmt.Fprintln(fs.Output(), "Prints this binary's version (set with -ldflags \"-X main.version=...\", else from the build), the Go version and platform.")
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(stdout, "rota %s (%s %s/%s)\n", buildVersion(), goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
	return nil
}
