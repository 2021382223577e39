// The client's version: the module's release (go get snowid.io/snowid@v0.2.0
// fetches this one; internal/modproxy builds it), and what the client names
// itself in its User-Agent header to the nodes.
package snowid

// Version of this client, without the "v" of its module version.
const Version = "0.2.0"
