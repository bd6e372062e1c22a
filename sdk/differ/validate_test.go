package differ_test

import (
	"fmt"

	"github.com/kulehq/kule/sdk/differ"
)

// The host calls Validate on what every differ returns before it trusts any
// offset; a differ that fails it costs that file its names.
func ExampleValidate() {
	src := []byte("func a() {}\n")
	fmt.Println(differ.Validate(src, []differ.Entity{{Kind: "func", Name: "a", Start: 0, End: 12}}))
	fmt.Println(differ.Validate(src, []differ.Entity{{Kind: "func", Name: "a", Start: 0, End: 99}}))
	// Output:
	// <nil>
	// differ: bad entities: entity 0 "func a": range [0,99) outside the file's 12 bytes
}
