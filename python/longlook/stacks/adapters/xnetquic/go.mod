module longlook/xnetquic

go 1.26.0

require (
	github.com/quic-go/qpack v0.6.0
	golang.org/x/net v0.62.0
	longlook/gofetch v0.0.0
)

require (
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

// the Go client programs' shared fetch JSON and page load, beside this folder in the source
// tree; the stack builder copies it beside the program and points this line at the copy
replace longlook/gofetch => ../../builds/gofetch
