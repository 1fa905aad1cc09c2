//go:build linux

package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Control groups hold the limits rlimits cannot: the memory a task's
// processes use together (not their address space), the processes it may
// have at once, its share of CPU. Each command gets a group of its own
// under the sandbox's parent group(s), joined by the helper before the
// program starts (so nothing of the program ever runs outside it) and
// removed after the command ends. The parent is a cgroup v2 directory
// (one hierarchy), or one directory per v1 controller (memory, pids, cpu);
// the process must be allowed to create groups in it (the local stack
// delegates v1 groups owned by the runner's uid; in Cloud Run the runner
// is root of its cgroup v2). Without a usable parent, rlimits are the
// only limits (address space instead of memory, per-uid processes).

// CgroupVersion names the control group hierarchy in use.
type CgroupVersion int

// Hierarchies.
const (
	// NoCgroup: no usable parent group: rlimits only.
	NoCgroup CgroupVersion = 0
	// CgroupV1: per-controller directories (memory, pids, cpu).
	CgroupV1 CgroupVersion = 1
	// CgroupV2: the unified hierarchy.
	CgroupV2 CgroupVersion = 2
)

// cgroups are the sandbox's parent groups.
type cgroups struct {
	version CgroupVersion
	v2      string            // parent directory (v2)
	v1      map[string]string // controller → parent directory (v1)
	weight  *parentWeight     // the parent's CPU weight, kept in step with its tasks
}

// parentWeight keeps the CPU weight of the parent group proportional to
// the commands running in it: the kernel weighs a group as one process
// among its siblings, so the runner's tasks together would get the CPU of
// one process of the host (the local stack: every other process is the
// parent's sibling); with the weight of n processes they get what n
// processes would. Each command's own group still caps it at its quota
// (Limits.CPUs).
type parentWeight struct {
	file string // cpu.shares (v1) or cpu.weight (v2) of the parent
	unit int64  // the weight of one process: 1024 (v1), 100 (v2)
	max  int64  // the largest weight the file takes

	mu      sync.Mutex
	running int64
}

// add counts a command in (+1) or out (-1) and writes the weight.
func (w *parentWeight) add(d int64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running += d
	_ = os.WriteFile(w.file, []byte(strconv.FormatInt(min(max(w.running, 1)*w.unit, w.max), 10)), 0)
}

// weightOf returns the weight file of parent when the process may write it.
func weightOf(parent string, v2 bool) *parentWeight {
	w := &parentWeight{file: filepath.Join(parent, "cpu.shares"), unit: 1024, max: 262144}
	if v2 {
		w = &parentWeight{file: filepath.Join(parent, "cpu.weight"), unit: 100, max: 10000}
	}
	f, err := os.OpenFile(w.file, os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	f.Close()
	return w
}

// detectCgroups interprets spec: "" (look for the process's own groups),
// a v2 directory, or comma-separated v1 controller directories
// ("/sys/fs/cgroup/memory/x,/sys/fs/cgroup/pids/x,/sys/fs/cgroup/cpu/x").
// It checks a group can be created in each parent.
func detectCgroups(spec string) (cgroups, error) {
	var c cgroups
	var dirs []string
	if strings.TrimSpace(spec) != "" {
		for _, d := range strings.Split(spec, ",") {
			if d = strings.TrimSpace(d); d != "" {
				dirs = append(dirs, d)
			}
		}
	} else {
		dirs = ownCgroups()
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
			c.version, c.v2 = CgroupV2, d
			continue
		}
		for _, ctl := range v1Controllers(d) {
			if c.v1 == nil {
				c.v1 = map[string]string{}
			}
			c.v1[ctl] = d
		}
	}
	if c.version == CgroupV2 {
		if err := c.enableV2(); err != nil {
			return cgroups{}, err
		}
		c.weight = weightOf(c.v2, true)
	} else if len(c.v1) > 0 {
		c.version = CgroupV1
		if d, ok := c.v1["cpu"]; ok {
			c.weight = weightOf(d, false)
		}
	}
	if c.version == NoCgroup {
		return c, errors.New("sandbox: no cgroup directory to create task groups in")
	}
	// A probe group proves the parents are writable.
	g, err := c.create(Limits{})
	if err != nil {
		return cgroups{}, err
	}
	g.remove()
	return c, nil
}

// v1Controllers lists the controllers among memory, pids and cpu of
// the cgroup v1 hierarchy d belongs to (from /proc/self/mountinfo: the
// super options of the cgroup mount whose mount point holds d).
func v1Controllers(d string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	best, opts := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		mp := f[4]
		if (d == mp || strings.HasPrefix(d, mp+"/")) && len(mp) > len(best) {
			best, opts = mp, g[2]
		}
	}
	var out []string
	for _, o := range strings.Split(opts, ",") {
		if o == "memory" || o == "pids" || o == "cpu" {
			out = append(out, o)
		}
	}
	return out
}

// ownCgroups lists the process's own group directories (/proc/self/cgroup).
func ownCgroups() []string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out = append(out, filepath.Join("/sys/fs/cgroup", parts[2]))
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if ctl == "memory" || ctl == "pids" || ctl == "cpu" {
				out = append(out, filepath.Join("/sys/fs/cgroup", ctl, parts[2]))
			}
		}
	}
	return out
}

// enableV2 makes the v2 parent able to hold task groups with the memory,
// pids and cpu controllers: the process moves itself into a leaf child
// ("runner"; a group with controllers enabled for its children may hold
// no process) and enables the controllers for the parent's children.
func (c *cgroups) enableV2() error {
	procs, _ := os.ReadFile(filepath.Join(c.v2, "cgroup.procs"))
	if strings.TrimSpace(string(procs)) != "" {
		leaf := filepath.Join(c.v2, "runner")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("sandbox: cgroup %s: %w", leaf, err)
		}
		for _, pid := range strings.Fields(string(procs)) {
			_ = os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
		}
	}
	avail, _ := os.ReadFile(filepath.Join(c.v2, "cgroup.controllers"))
	var want []string
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		if strings.Contains(" "+string(avail)+" ", " "+ctl+" ") || strings.Contains(string(avail), ctl) {
			want = append(want, "+"+ctl)
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("sandbox: cgroup %s has none of the memory, pids and cpu controllers", c.v2)
	}
	if err := os.WriteFile(filepath.Join(c.v2, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0); err != nil {
		return fmt.Errorf("sandbox: cgroup %s: enable %v: %w", c.v2, want, err)
	}
	return nil
}

// group is one command's control group(s).
type group struct {
	version CgroupVersion
	dirs    map[string]string // controller → directory ("" key for v2)
	limits  Limits
	weight  *parentWeight
	counted bool // counted in weight
}

// create makes a command's group with the limits (zero fields: none).
func (c cgroups) create(l Limits) (*group, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "task-" + hex.EncodeToString(b[:])
	g := &group{version: c.version, dirs: map[string]string{}, limits: l, weight: c.weight}
	write := func(dir, file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
			return fmt.Errorf("sandbox: cgroup %s: %w", filepath.Join(dir, file), err)
		}
		return nil
	}
	switch c.version {
	case CgroupV2:
		d := filepath.Join(c.v2, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		g.dirs[""] = d
		var errs []error
		if l.MemoryBytes > 0 {
			errs = append(errs, write(d, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)))
			if _, err := os.Stat(filepath.Join(d, "memory.swap.max")); err == nil {
				errs = append(errs, write(d, "memory.swap.max", "0"))
			}
		}
		if l.Processes > 0 {
			errs = append(errs, write(d, "pids.max", strconv.FormatInt(l.Processes, 10)))
		}
		if l.CPUs > 0 {
			errs = append(errs, write(d, "cpu.max", fmt.Sprintf("%d 100000", int64(l.CPUs*100000))))
		}
		if err := errors.Join(errs...); err != nil {
			g.remove()
			return nil, err
		}
	case CgroupV1:
		for ctl, parent := range c.v1 {
			d := filepath.Join(parent, name)
			if err := os.Mkdir(d, 0o755); err != nil {
				g.remove()
				return nil, fmt.Errorf("sandbox: cgroup: %w", err)
			}
			g.dirs[ctl] = d
			var err error
			switch ctl {
			case "memory":
				if l.MemoryBytes > 0 {
					err = write(d, "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
					if _, serr := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes")); err == nil && serr == nil {
						err = write(d, "memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
					}
				}
			case "pids":
				if l.Processes > 0 {
					err = write(d, "pids.max", strconv.FormatInt(l.Processes, 10))
				}
			case "cpu":
				if l.CPUs > 0 {
					if err = write(d, "cpu.cfs_period_us", "100000"); err == nil {
						err = write(d, "cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*100000), 10))
					}
				}
			}
			if err != nil {
				g.remove()
				return nil, err
			}
		}
	default:
		return nil, errors.New("sandbox: no cgroup hierarchy")
	}
	g.weight.add(1)
	g.counted = true
	return g, nil
}

// has reports whether the group has controller ctl (v2: always).
func (g *group) has(ctl string) bool {
	if g.version == CgroupV2 {
		return true
	}
	_, ok := g.dirs[ctl]
	return ok
}

// procsFiles are the cgroup.procs files the helper writes itself into.
func (g *group) procsFiles() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, d := range g.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// counter reads "key N" from a flat-keyed cgroup file (0 if absent).
func counter(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// hit names the limit the command's group reached ("" none): "memory"
// when the kernel killed a process of the group for memory, "processes"
// when a fork failed at pids.max.
func (g *group) hit() string {
	if g == nil {
		return ""
	}
	switch g.version {
	case CgroupV2:
		d := g.dirs[""]
		if counter(filepath.Join(d, "memory.events"), "oom_kill") > 0 {
			return "memory"
		}
		if counter(filepath.Join(d, "pids.events"), "max") > 0 {
			return "processes"
		}
	case CgroupV1:
		if d, ok := g.dirs["memory"]; ok && counter(filepath.Join(d, "memory.oom_control"), "oom_kill") > 0 {
			return "memory"
		}
		if d, ok := g.dirs["pids"]; ok && counter(filepath.Join(d, "pids.events"), "max") > 0 {
			return "processes"
		}
	}
	return ""
}

// remove deletes the group once its processes are gone (they are killed
// with the command's PID namespace; rmdir is retried briefly while the
// kernel reaps them).
func (g *group) remove() {
	if g == nil {
		return
	}
	if g.counted {
		g.counted = false
		g.weight.add(-1)
	}
	for _, d := range g.dirs {
		for i := 0; i < 50; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			// Processes left (no PID namespace): kill them.
			if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for _, p := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
						_ = unix.Kill(pid, unix.SIGKILL)
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Delegate creates control groups named name under the process's own
// (cgroup v1: in the memory, pids and cpu hierarchies; v2: in the unified
// one, with those controllers enabled for its children) and gives them to
// host uid uid, for a process confined onto that uid (ConfineAttr, the
// runner) to create its tasks' groups in. It returns the
// NOETL_SANDBOX_CGROUP value naming them ("" and an error when there is
// no hierarchy it may write) and, for v2, the directory of a leaf group
// inside them that the confined process must start in (clone into it:
// SysProcAttr.UseCgroupFD), so that moving its tasks between groups stays
// inside the delegated tree; nil for v1. Only root may delegate.
func Delegate(name string, uid int) (string, *os.File, error) {
	if strings.ContainsAny(name, "/,") || name == "" {
		return "", nil, fmt.Errorf("sandbox: cgroup name %q", name)
	}
	own := func(paths ...string) error {
		for _, p := range paths {
			if err := os.Chown(p, uid, uid); err != nil {
				return fmt.Errorf("sandbox: delegate %s: %w", p, err)
			}
		}
		return nil
	}
	var v1 []string
	for _, d := range ownCgroups() {
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
			// v2: controllers for the children of d, then name and its
			// leaf, the confined process's own group.
			_ = os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
			g := filepath.Join(d, name)
			leaf := filepath.Join(g, "runner")
			if err := os.MkdirAll(leaf, 0o755); err != nil {
				return "", nil, fmt.Errorf("sandbox: delegate: %w", err)
			}
			if err := own(g, filepath.Join(g, "cgroup.procs"), filepath.Join(g, "cgroup.subtree_control"), filepath.Join(g, "cgroup.threads"),
				leaf, filepath.Join(leaf, "cgroup.procs"), filepath.Join(leaf, "cgroup.threads")); err != nil {
				return "", nil, err
			}
			_ = own(filepath.Join(g, "cpu.weight")) // the weight of its tasks (parentWeight)
			f, err := os.Open(leaf)
			if err != nil {
				return "", nil, fmt.Errorf("sandbox: delegate: %w", err)
			}
			return g, f, nil
		}
		if len(v1Controllers(d)) == 0 {
			continue
		}
		g := filepath.Join(d, name)
		if err := os.Mkdir(g, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			continue // a hierarchy this process may not write
		}
		if err := own(g, filepath.Join(g, "cgroup.procs"), filepath.Join(g, "tasks")); err != nil {
			_ = os.Remove(g)
			continue
		}
		if slices.Contains(v1Controllers(d), "cpu") {
			_ = own(filepath.Join(g, "cpu.shares")) // the weight of its tasks (parentWeight)
		}
		v1 = append(v1, g)
	}
	if len(v1) == 0 {
		return "", nil, errors.New("sandbox: no cgroup hierarchy to delegate (none writable)")
	}
	return strings.Join(v1, ","), nil, nil
}

// Undelegate removes the groups Delegate made (after the confined process
// and its tasks are gone).
func Undelegate(spec string) {
	for _, d := range strings.Split(spec, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() {
				_ = os.Remove(filepath.Join(d, e.Name()))
			}
		}
		_ = os.Remove(d)
	}
}
