// Command go_oracle prints, as JSON lines, every call in a Go module's non-test code that
// go/types resolves to a function or method declared in that module.
//
// Usage: go run . MODULE_ROOT > calls.jsonl
//
// Only the standard library is used: the module's own packages are type-checked from
// source here, the standard library through go/importer's "source" importer, so the module
// must import nothing outside itself and the standard library.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// errNoGo marks a directory without buildable Go files: not a package, nothing to report.
var errNoGo = errors.New("no buildable Go files")

// checked names a file that was type-checked, so that only those are compared.
type checked struct {
	File string `json:"checked"`
}

// call is one resolved call site; Callee is "Func" or "Type.Method" as fourfold names it.
type call struct {
	File       string `json:"file"`
	Line       int    `json:"line"`
	Caller     string `json:"caller"`
	CalleeFile string `json:"callee_file"`
	Callee     string `json:"callee"`
	Kind       string `json:"kind"`
}

type loader struct {
	root    string
	module  string
	fset    *token.FileSet
	std     types.Importer
	pkgs    map[string]*types.Package
	files   map[string][]*ast.File
	infos   map[string]*types.Info
	loading map[string]bool
	failed  map[string]error
}

func (l *loader) Import(path string) (*types.Package, error) {
	if path != l.module && !strings.HasPrefix(path, l.module+"/") {
		return l.std.Import(path)
	}
	return l.load(filepath.Join(l.root, strings.TrimPrefix(strings.TrimPrefix(path, l.module), "/")), path)
}

// load type-checks a package once; a failure is kept, so that its importers report it.
func (l *loader) load(dir, path string) (*types.Package, error) {
	if p, ok := l.pkgs[path]; ok {
		return p, nil
	}
	if err, ok := l.failed[path]; ok {
		return nil, err
	}
	if l.loading[path] {
		return nil, fmt.Errorf("import cycle through %s", path)
	}
	l.loading[path] = true
	pkg, err := l.check(dir, path)
	if err != nil {
		l.failed[path] = err
	}
	return pkg, err
}

// check parses and type-checks the non-test files of one directory that the default build
// context (this GOOS/GOARCH, no tags) would compile.
func (l *loader) check(dir, path string) (*types.Package, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(l.fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errNoGo
	}
	info := &types.Info{
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: l}
	pkg, err := conf.Check(path, l.fset, files, info)
	if err != nil {
		return nil, err
	}
	l.pkgs[path], l.files[path], l.infos[path] = pkg, files, info
	return pkg, nil
}

// calleeName names a function "F" and a method "T.M", T being the receiver's named type
// (a pointer receiver's element type; an interface's own name for its methods), and a
// method of an unnamed interface (x.(interface{ M() })) "": no definition has that name.
func calleeName(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil {
		return fn.Name()
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + fn.Name()
	}
	return ""
}

func (l *loader) rel(pos token.Pos) (string, int, bool) {
	p := l.fset.Position(pos)
	r, err := filepath.Rel(l.root, p.Filename)
	if err != nil || strings.HasPrefix(r, "..") || p.Filename == "" {
		return "", 0, false
	}
	return filepath.ToSlash(r), p.Line, true
}

// funcName names the declaration enclosing a call, for the report only.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}

func (l *loader) calls(path string, out *json.Encoder) {
	info := l.infos[path]
	for _, f := range l.files[path] {
		name, _, _ := l.rel(f.Pos())
		out.Encode(checked{name})
		for _, decl := range f.Decls {
			caller := ""
			if fd, ok := decl.(*ast.FuncDecl); ok {
				caller = funcName(fd)
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				ce, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fun := ce.Fun
				for p, ok := fun.(*ast.ParenExpr); ok; p, ok = fun.(*ast.ParenExpr) {
					fun = p.X
				}
				// An explicit instantiation F[T](x) calls F.
				switch x := fun.(type) {
				case *ast.IndexExpr:
					fun = x.X
				case *ast.IndexListExpr:
					fun = x.X
				}
				var id *ast.Ident
				var obj types.Object
				kind := "function"
				switch x := fun.(type) {
				case *ast.Ident:
					id, obj = x, info.Uses[x]
				case *ast.SelectorExpr:
					id = x.Sel
					if sel, ok := info.Selections[x]; ok {
						obj, kind = sel.Obj(), "method"
						if sel.Kind() == types.MethodExpr {
							kind = "method expression"
						}
					} else {
						obj, kind = info.Uses[x.Sel], "qualified"
					}
				default:
					return true
				}
				fn, ok := obj.(*types.Func)
				if !ok {
					return true
				}
				calleeFile, _, inside := l.rel(fn.Pos())
				callee := calleeName(fn)
				if !inside || callee == "" {
					return true
				}
				file, line, _ := l.rel(id.Pos())
				if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
					if _, ok := recv.Type().Underlying().(*types.Interface); ok {
						kind = "interface method"
					}
				}
				out.Encode(call{file, line, caller, calleeFile, callee, kind})
				return true
			})
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_oracle MODULE_ROOT")
		os.Exit(2)
	}
	root, _ := filepath.Abs(os.Args[1])
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	module := ""
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			module = strings.Trim(f[1], `"`)
		}
	}
	fset := token.NewFileSet()
	l := &loader{root: root, module: module, fset: fset, std: importer.ForCompiler(fset, "source", nil),
		pkgs: map[string]*types.Package{}, files: map[string][]*ast.File{},
		infos: map[string]*types.Info{}, loading: map[string]bool{}, failed: map[string]error{}}
	// Every directory with Go files is a package; testdata, hidden and vendor folders are not.
	var paths []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		path := module
		if rel != "." {
			path = module + "/" + filepath.ToSlash(rel)
		}
		if _, err := l.load(p, path); err == errNoGo {
			return nil
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "skip %s: %v\n", path, err)
			return nil
		}
		paths = append(paths, path)
		return nil
	})
	sort.Strings(paths)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for _, p := range paths {
		l.calls(p, enc)
	}
}
