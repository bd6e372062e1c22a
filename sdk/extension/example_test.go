package extension_test

import (
	"fmt"

	"github.com/kulehq/kule/sdk/extension"
)

func ExampleParseManifest() {
	m, err := extension.ParseManifest([]byte(`{"id":"me.hello","name":"Hello","version":"0.1.0",
		"permissions":["commands","tasks.read"],"commands":[{"id":"hello","title":"Say hello"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range m.Permissions {
		fmt.Printf("%s: %s\n", p, p.Describe())
	}
	_, err = extension.ParseManifest([]byte(`{"id":"me.x","name":"X","version":"0.1.0","permissions":["secrets"]}`))
	fmt.Println(err != nil)
	// Output:
	// commands: add commands to the command palette and `kule ext run`
	// tasks.read: see the list of tasks: their ids, names, folders and states
	// true
}

func ExampleParseTheme() {
	_, err := extension.ParseTheme([]byte(`{"name":"Dusk","colors":{"bg":"url(https://x)"}}`))
	fmt.Println(err)
	// Output:
	// extension theme: bg = "url(https://x)" is not a colour written #rrggbb
}
