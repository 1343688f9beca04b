package vet

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// PackageRef is a package a server's command fetches and runs: an npm package (npx,
// npm exec, pnpm dlx, yarn dlx, bunx), a PyPI one (uvx, uv tool run, pipx run) or an
// OCI image (docker or podman run). Arg is the index in Server.Args of the argument
// that names it.
type PackageRef struct {
	Ecosystem string // "npm", "pypi" or "oci"
	Name      string // without version: "@scope/pkg", "pkg", "ghcr.io/org/image"
	Version   string // as written: "1.2.3", "^1", "latest"; "" for none (a tag, for an image)
	Digest    string // an image's "sha256:…"
	Arg       int
}

// Pinned reports whether the reference names one artifact: an exact version, or a
// digest (an image tag other than latest counts as a version).
func (p PackageRef) Pinned() bool {
	switch p.Ecosystem {
	case "oci":
		return p.Digest != "" || (p.Version != "" && p.Version != "latest")
	case "pypi":
		return pypiExact.MatchString(p.Version)
	default:
		return semverExact.MatchString(p.Version)
	}
}

// Spec is the reference as a package manager takes it: "pkg@1.2.3", "pkg==1.2.3",
// "image:tag@sha256:…".
func (p PackageRef) Spec() string {
	switch {
	case p.Ecosystem == "pypi" && p.Version != "":
		return p.Name + "==" + p.Version
	case p.Ecosystem == "oci":
		s := p.Name
		if p.Version != "" {
			s += ":" + p.Version
		}
		if p.Digest != "" {
			s += "@" + p.Digest
		}
		return s
	case p.Version != "":
		return p.Name + "@" + p.Version
	}
	return p.Name
}

var (
	semverExact = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	pypiExact   = regexp.MustCompile(`^[0-9][0-9A-Za-z.+!-]*$`)
	digestRe    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// base is a command's program name: its last path element, less .exe or .cmd.
func base(cmd string) string {
	b := filepath.Base(strings.ReplaceAll(cmd, `\`, "/"))
	b = strings.ToLower(b)
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

// unwrap returns the command line that actually runs, and the index in args of its
// first argument: "cmd /c npx …" (Windows) becomes "npx …", and mcpgate's own
// "mcpgate gateway run [flags] -- CMD …" becomes CMD ….
func unwrap(command string, args []string) (cmd string, rest []string, at int) {
	cmd, rest, at = command, args, 0
	for range 3 {
		switch b := base(cmd); {
		case b == "cmd" && len(rest) >= 2 && strings.EqualFold(rest[0], "/c"):
			cmd, rest, at = rest[1], rest[2:], at+2
		case b == "mcpgate":
			_, inner, ok := gatewayArgs(rest)
			if !ok || inner >= len(rest) {
				return cmd, rest, at
			}
			cmd, rest, at = rest[inner], rest[inner+1:], at+inner+1
		default:
			return cmd, rest, at
		}
	}
	return cmd, rest, at
}

// gatewayArgs splits the arguments of "mcpgate gateway run …": the flags (their
// indexes run from 2 to the "--"), and the index of the upstream command after
// "--". ok is false when args are not a gateway run.
func gatewayArgs(args []string) (flags []string, inner int, ok bool) {
	if len(args) < 2 || args[0] != "gateway" || args[1] != "run" {
		return nil, 0, false
	}
	for i := 2; i < len(args); i++ {
		if args[i] == "--" {
			return args[2:i], i + 1, true
		}
	}
	return args[2:], len(args), true
}

// Packages returns the packages a server's command fetches, after unwrap.
func Packages(s Server) []PackageRef {
	cmd, args, at := unwrap(s.Command, s.Args)
	var refs []PackageRef
	add := func(r PackageRef, ok bool) {
		if ok {
			r.Arg += at
			refs = append(refs, r)
		}
	}
	switch base(cmd) {
	case "npx", "bunx":
		add(npmExec(args, 0))
	case "npm":
		if len(args) > 0 && (args[0] == "exec" || args[0] == "x") {
			add(npmExec(args[1:], 1))
		}
	case "pnpm", "yarn", "bun":
		if len(args) > 0 && (args[0] == "dlx" || args[0] == "x") {
			add(npmExec(args[1:], 1))
		}
	case "uvx":
		add(pyExec(args, 0, "--from"))
	case "uv":
		if len(args) > 1 && args[0] == "tool" && args[1] == "run" {
			add(pyExec(args[2:], 2, "--from"))
		}
	case "pipx":
		if len(args) > 0 && args[0] == "run" {
			add(pyExec(args[1:], 1, "--spec"))
		}
	case "docker", "podman", "nerdctl":
		if len(args) > 0 && args[0] == "run" {
			add(ociRun(args[1:], 1))
		} else if len(args) > 1 && args[0] == "container" && args[1] == "run" {
			add(ociRun(args[2:], 2))
		}
	}
	return refs
}

// npmValueFlags are npx / npm exec options that take a value.
var npmValueFlags = map[string]bool{"-p": true, "--package": true, "-c": true, "--call": true, "--registry": true, "--cache": true, "--userconfig": true, "-w": true, "--workspace": true}

func npmExec(args []string, off int) (PackageRef, bool) {
	pkgAt := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if pkgAt < 0 && i+1 < len(args) {
				pkgAt = i + 1
			}
			break
		}
		if strings.HasPrefix(a, "--package=") {
			return npmRef(strings.TrimPrefix(a, "--package="), off+i)
		}
		if (a == "-p" || a == "--package") && i+1 < len(args) {
			return npmRef(args[i+1], off+i+1)
		}
		if strings.HasPrefix(a, "-") {
			if npmValueFlags[a] {
				i++
			}
			continue
		}
		pkgAt = i
		break
	}
	if pkgAt < 0 || pkgAt >= len(args) {
		return PackageRef{}, false
	}
	return npmRef(args[pkgAt], off+pkgAt)
}

// npmRef reads an npm package spec; paths, URLs and git specs are not registry
// packages and give none.
func npmRef(spec string, arg int) (PackageRef, bool) {
	if spec == "" || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") ||
		strings.Contains(spec, ":") || strings.Contains(spec, `\`) {
		return PackageRef{}, false
	}
	name, version := spec, ""
	at := strings.LastIndexByte(spec, '@')
	if at > 0 {
		name, version = spec[:at], spec[at+1:]
	}
	if name == "" || (strings.HasPrefix(name, "@") && !strings.Contains(name, "/")) {
		return PackageRef{}, false
	}
	return PackageRef{Ecosystem: "npm", Name: name, Version: version, Arg: arg}, true
}

// pyValueFlags are uvx / pipx run options that take a value.
var pyValueFlags = map[string]bool{"--from": true, "--spec": true, "--with": true, "-w": true, "--python": true, "-p": true,
	"--index-url": true, "-i": true, "--index": true, "--extra-index-url": true, "--default-index": true, "--find-links": true, "-f": true,
	"--with-requirements": true, "--constraints": true, "-c": true, "--overrides": true, "--pip-args": true, "--directory": true, "--env-file": true}

func pyExec(args []string, off int, fromFlag string) (PackageRef, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, fromFlag+"=") {
			return pyRef(strings.TrimPrefix(a, fromFlag+"="), off+i)
		}
		if a == fromFlag && i+1 < len(args) {
			return pyRef(args[i+1], off+i+1)
		}
		if a == "--" {
			if i+1 < len(args) {
				return pyRef(args[i+1], off+i+1)
			}
			return PackageRef{}, false
		}
		if strings.HasPrefix(a, "-") {
			if pyValueFlags[a] {
				i++
			}
			continue
		}
		return pyRef(a, off+i)
	}
	return PackageRef{}, false
}

// pyRef reads a PyPI requirement: name, name==1.2.3, name@1.2.3 (uvx), name[extra]>=1;
// paths, URLs and git specs give none.
func pyRef(spec string, arg int) (PackageRef, bool) {
	if spec == "" || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") || strings.Contains(spec, "://") || strings.HasPrefix(spec, "git+") {
		return PackageRef{}, false
	}
	name, version := spec, ""
	if i := strings.Index(spec, "=="); i > 0 {
		name, version = spec[:i], spec[i+2:]
	} else if i := strings.IndexByte(spec, '@'); i > 0 {
		name, version = spec[:i], spec[i+1:]
	} else if i := strings.IndexAny(spec, "<>=!~,;"); i > 0 {
		name, version = spec[:i], spec[i:] // a range
	}
	if j := strings.IndexByte(name, '['); j > 0 {
		name = name[:j]
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return PackageRef{}, false
	}
	if strings.Contains(version, "*") || strings.Contains(version, ",") {
		version = "range " + version
	}
	return PackageRef{Ecosystem: "pypi", Name: strings.ToLower(name), Version: strings.TrimSpace(version), Arg: arg}, true
}

// ociValueFlags are docker/podman run options that take a value (given as a separate
// argument).
var ociValueFlags = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`-e --env --env-file -v --volume --mount -p --publish --name -w --workdir -u --user
		--network --net -l --label --label-file --entrypoint --add-host --cap-add --cap-drop --device --dns --dns-search
		--dns-option -h --hostname -m --memory --memory-swap --cpus --cpu-shares -c --cpuset-cpus --platform --pull
		--restart --runtime --security-opt --tmpfs --ulimit --log-driver --log-opt --ipc --pid --shm-size --stop-signal
		--stop-timeout --group-add --cidfile --health-cmd --health-interval --mac-address --ip --ip6 --userns --uts
		--cgroupns --cgroup-parent --gpus --expose --link --volumes-from --attach -a --annotation --secret --pod
		--network-alias --sysctl --storage-opt --isolation --domainname --oom-score-adj --blkio-weight --device-read-bps
		--device-write-bps --kernel-memory --memory-reservation --pids-limit --init-path --arch --os --variant --authfile
		--cert-dir --creds --decryption-key --env-merge --hooks-dir --image-volume --log-level --passwd-entry --preserve-fds
		--requires --sdnotify --seccomp-policy --subgidname --subuidname --timeout --tz --umask --unsetenv --chrootdirs`) {
		ociValueFlags[f] = true
	}
}

func ociRun(args []string, off int) (PackageRef, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return ociRef(args[i+1], off+i+1)
			}
			return PackageRef{}, false
		}
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && ociValueFlags[a] {
				i++
			}
			continue
		}
		return ociRef(a, off+i)
	}
	return PackageRef{}, false
}

// ociRef reads an image reference: [registry/]name[:tag][@sha256:…].
func ociRef(ref string, arg int) (PackageRef, bool) {
	if ref == "" || strings.ContainsAny(ref, " \t") {
		return PackageRef{}, false
	}
	r := PackageRef{Ecosystem: "oci", Arg: arg}
	name := ref
	if i := strings.IndexByte(name, '@'); i >= 0 {
		r.Digest, name = name[i+1:], name[:i]
		if !digestRe.MatchString(r.Digest) {
			r.Digest = "" // not a digest: unpinned
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		r.Version, name = name[i+1:], name[:i]
	}
	for _, p := range []string{"docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"} {
		name = strings.TrimPrefix(name, p)
	}
	if name == "" {
		return PackageRef{}, false
	}
	r.Name = strings.ToLower(name)
	return r, true
}

// checkPackages gives vet_unpinned_package for each unpinned package of s.
func checkPackages(s Server) []Finding {
	var out []Finding
	for _, p := range Packages(s) {
		if p.Pinned() {
			continue
		}
		how := "no version"
		switch {
		case p.Ecosystem == "oci" && p.Version == "latest":
			how = "the tag latest and no digest"
		case p.Ecosystem == "oci":
			how = "no tag or digest"
		case p.Version != "":
			how = "a version that is not exact (" + strconv.Quote(p.Version) + ")"
		}
		out = append(out, newFinding(RuleUnpinnedPackage, s.Name, s.Pointer+"/args/"+strconv.Itoa(p.Arg),
			kindOf(p)+" "+strconv.Quote(p.Name)+" is run with "+how+": each start may fetch a different artifact; pin an exact version"+pinHint(p)))
	}
	return out
}

func pinHint(p PackageRef) string {
	switch p.Ecosystem {
	case "oci":
		return " or digest (image@sha256:…)"
	case "pypi":
		return " (pkg==1.2.3)"
	}
	return " (pkg@1.2.3)"
}

func kindOf(p PackageRef) string {
	if p.Ecosystem == "oci" {
		return "image"
	}
	return p.Ecosystem + " package"
}
