// Command vulncheckfixture calls golang.org/x/text/language.Parse, the symbol
// that GO-2021-0113 (CVE-2021-38561) names for golang.org/x/text below v0.3.7.
package main

import (
	"fmt"
	"os"

	"golang.org/x/text/language"
)

func main() {
	tag, err := language.Parse(os.Args[len(os.Args)-1])
	fmt.Println(tag, err)
}
