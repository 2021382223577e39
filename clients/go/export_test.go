// What the external tests (package snowid_test) may reach inside.
package snowid

// AskInJSON returns options whose client asks every endpoint in JSON, as if
// each had refused format=binary: the hostile-node tests run the JSON rules
// with it.
func AskInJSON(options Options) Options {
	options.askInJSON = true
	return options
}
