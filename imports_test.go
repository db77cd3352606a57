package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// module is this module's path; packages below are named relative to it.
const module = "github.com/trawlerhq/trawler"

// TestImportRules checks every package's non-test imports against the
// import table of docs/architecture.md, so the document and the code
// cannot drift apart: a new import either follows the table or changes
// it, in the same commit.
func TestImportRules(t *testing.T) {
	rules := importTable(t, "docs/architecture.md")
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := internalName(fields[0])
		allowed, ok := rules.forPackage(pkg)
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md's import table", pkg)
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if dep := internalName(imp); !matchesAny(allowed, dep) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow (it allows %v)", pkg, dep, allowed)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages: go list or the table is not what it seems", checked)
	}
}

// TestImportRulesRefuse makes sure the matcher can fail: a row's
// patterns match what they name and nothing else.
func TestImportRulesRefuse(t *testing.T) {
	rules := importRules{{"api", []string{"store", "k8s/..."}}, {"k8s/...", []string{"k8s/..."}}}
	allowed, _ := rules.forPackage("api")
	for dep, want := range map[string]bool{"store": true, "k8s": true, "k8s/apis/trawler/v1": true, "operator": false, "storex": false, "k8sx": false} {
		if got := matchesAny(allowed, dep); got != want {
			t.Errorf("api importing %s allowed = %t, want %t", dep, got, want)
		}
	}
	if _, ok := rules.forPackage("operator"); ok {
		t.Error("a package without a row was given one")
	}
}

// importRules are the rows of the table: a package pattern and the
// internal packages it may import.
type importRules []struct {
	pkg     string
	allowed []string
}

// forPackage returns the allowed imports of the most specific row.
func (r importRules) forPackage(pkg string) ([]string, bool) {
	best := -1
	for i, row := range r {
		if matches(row.pkg, pkg) && (best < 0 || len(row.pkg) > len(r[best].pkg)) {
			best = i
		}
	}
	if best < 0 {
		return nil, false
	}
	return r[best].allowed, true
}

// matches reports whether pattern ("x" or "x/...") names pkg.
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

func matchesAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if matches(p, pkg) {
			return true
		}
	}
	return false
}

// internalName is a package path relative to the module ("." for the
// module's root package).
func internalName(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// importTable reads the rows of the table under "## Import rules":
// | `pkg` | `a`, `b` | (or "(nothing)").
func importTable(t *testing.T, file string) importRules {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := regexp.MustCompile("`([^`]+)`")
	var rules importRules
	inSection := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inSection = line == "## Import rules"
			continue
		}
		cells := strings.Split(line, "|")
		if !inSection || len(cells) != 4 {
			continue
		}
		pkg := code.FindStringSubmatch(cells[1])
		if pkg == nil {
			continue // the header and its rule
		}
		var allowed []string
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			allowed = append(allowed, m[1])
		}
		rules = append(rules, struct {
			pkg     string
			allowed []string
		}{pkg[1], allowed})
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no import table under \"## Import rules\"", file)
	}
	return rules
}
