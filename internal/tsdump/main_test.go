package tsdump
import ("testing";"os";"fmt";"strings"
 sitter "github.com/tree-sitter/go-tree-sitter"
 rs "github.com/tree-sitter/tree-sitter-rust/bindings/go"
 js "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
 ts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
 cs "github.com/tree-sitter/tree-sitter-c-sharp/bindings/go"
 py "github.com/tree-sitter/tree-sitter-python/bindings/go"
)
func dump(n *sitter.Node, src []byte, depth int, field string) {
  if depth > 6 { return }
  t := ""
  if n.NamedChildCount()==0 { t = " " + string(src[n.StartByte():n.EndByte()]) }
  fmt.Printf("%s%s%s%s\n", strings.Repeat("  ", depth), field, n.Kind(), t)
  for i := uint(0); i < n.ChildCount(); i++ {
    c := n.Child(i); if !c.IsNamed() { continue }
    f := n.FieldNameForChild(uint32(i)); if f != "" { f += ": " }
    dump(c, src, depth+1, f)
  }
}
func TestDump(t *testing.T) {
  langs := map[string]func() *sitter.Language{
   "rs": func() *sitter.Language { return sitter.NewLanguage(rs.Language()) },
   "js": func() *sitter.Language { return sitter.NewLanguage(js.Language()) },
   "ts": func() *sitter.Language { return sitter.NewLanguage(ts.LanguageTypescript()) },
   "tsx": func() *sitter.Language { return sitter.NewLanguage(ts.LanguageTSX()) },
   "cs": func() *sitter.Language { return sitter.NewLanguage(cs.Language()) },
   "py": func() *sitter.Language { return sitter.NewLanguage(py.Language()) },
  }
  f := os.Getenv("F"); src, _ := os.ReadFile(f)
  ext := f[strings.LastIndex(f, ".")+1:]
  p := sitter.NewParser(); defer p.Close(); p.SetLanguage(langs[ext]())
  tr := p.Parse(src, nil); defer tr.Close()
  dump(tr.RootNode(), src, 0, "")
}
