package export

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The rules for the names xpk passes on: a reservation to gcloud and GKE,
// an image to Docker. xpk runs its gcloud, docker and crane commands in a
// shell with the names unquoted (gcloud beta compute reservations
// describe NAME, crane mutate IMAGE; [xpk] ../core/reservation.py,
// ../core/docker_image.py, ../core/commands.py shell=True), so a name
// outside its rule is not only refused later: a shell reads it.

// resourceName is Compute Engine's rule for the name of a resource, a
// reservation's and its blocks' among them (Compute Engine API v1,
// Reservation.name: "1-63 characters long and match the regular
// expression [a-z]([-a-z0-9]*[a-z0-9])?").
var resourceName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// projectID is Resource Manager's rule for a project ID
// (Project.projectId: 6 to 30 lower-case letters, digits or hyphens,
// starting with a letter, not ending with a hyphen).
var projectID = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)

const (
	resourceNameWant = "a Compute Engine resource name: at most 63 lower-case letters, digits and hyphens, starting with a letter and not ending with a hyphen"
	reservationForm  = "NAME, or projects/PROJECT/reservations/NAME for another project's, with /reservationBlocks/BLOCK and /reservationSubBlocks/SUB_BLOCK after it"
)

// ValidReservation checks a reservation (field names it: the caller's
// word, or a plan option in braces that Error.Phrase spells) as xpk reads
// it ([xpk] ../core/reservation.py _try_parse_reservation): one
// reservation (a workload create's node auto-provisioning takes a single
// one, [xpk] ../core/nap.py) in one of the forms of reservationForm.
func ValidReservation(field, s string) error {
	bad := func(format string, a ...any) error {
		return &Error{Target: "xpk", Field: field, Value: strconv.Quote(s), Want: fmt.Sprintf(format, a...), Err: ErrInvalid}
	}
	if strings.Contains(s, ",") {
		return bad("want one reservation: xpk's workload create takes a single one")
	}
	parts := strings.Split(s, "/")
	if parts[0] == "projects" {
		if len(parts) < 4 || parts[2] != "reservations" {
			return bad("want %s", reservationForm)
		}
		if !projectID.MatchString(parts[1]) {
			return bad("project %q is not a project ID: want 6 to 30 lower-case letters, digits and hyphens, starting with a letter and not ending with a hyphen", parts[1])
		}
		parts = parts[3:]
	}
	names := []string{"reservation", "block", "sub-block"}
	switch {
	case len(parts) == 1:
	case len(parts) == 3 && parts[1] == "reservationBlocks":
	case len(parts) == 5 && parts[1] == "reservationBlocks" && parts[3] == "reservationSubBlocks":
	default:
		return bad("want %s", reservationForm)
	}
	for i := 0; i < len(parts); i += 2 {
		if !resourceName.MatchString(parts[i]) {
			if len(parts) == 1 {
				return bad("want %s", resourceNameWant)
			}
			return bad("%s %q: want %s", names[i/2], parts[i], resourceNameWant)
		}
	}
	return nil
}

// Docker's image reference grammar, as distribution/reference writes it
// (regexp.go @0965666a): [DOMAIN[:PORT]/]PATH[:TAG][@DIGEST], the path
// components lower-case letters and digits joined by ., _, __ or dashes.
const (
	refAlphanumeric = `[a-z0-9]+`
	refSeparator    = `(?:[._]|__|[-]+)`
	refDomainPart   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refHost         = `(?:` + refDomainPart + `(?:\.` + refDomainPart + `)*|\[(?:[a-fA-F0-9:]+)\])`
	refDomain       = refHost + `(?::[0-9]+)?`
	refComponent    = refAlphanumeric + `(?:` + refSeparator + refAlphanumeric + `)*`
	refPath         = refComponent + `(?:/` + refComponent + `)*`
	refTag          = `[\w][\w.-]{0,127}`
	refDigest       = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
)

var (
	imageReference = regexp.MustCompile(`^((?:` + refDomain + `/)?` + refPath + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	imageName      = regexp.MustCompile(`^(?:` + refDomain + `/)?(` + refPath + `)$`)
	// the digests the OCI image spec registers (descriptor.md,
	// "Registered algorithms"): sha256 and sha512, lower-case hex
	imageDigest = regexp.MustCompile(`^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)
)

// maxRepository is distribution/reference's RepositoryNameTotalLengthMax:
// the longest path of an image, in bytes.
const maxRepository = 255

// ValidImage checks an image name (field names it, as ValidReservation's
// does) as Docker parses it
// (distribution/reference Parse): xpk puts --docker-image in the JobSet's
// container image and --base-docker-image in a Dockerfile's FROM for
// docker buildx build, or gives it to crane mutate ([xpk]
// ../core/docker_image.py, ../core/docker_container.py).
func ValidImage(field, s string) error {
	bad := func(want string) error {
		return &Error{Target: "xpk", Field: field, Value: strconv.Quote(s), Want: want, Err: ErrInvalid}
	}
	m := imageReference.FindStringSubmatch(s)
	if m == nil {
		if l := strings.ToLower(s); l != s && imageReference.MatchString(l) {
			return bad("want the repository path in lower-case (Docker's image reference grammar)")
		}
		return bad("want an image by Docker's image reference grammar, [HOST[:PORT]/]PATH[:TAG][@DIGEST], " +
			"PATH of lower-case letters and digits joined by /, ., _, __ or dashes, TAG at most 128 letters, digits, _, . and -")
	}
	if n := imageName.FindStringSubmatch(m[1]); n != nil && len(n[1]) > maxRepository {
		return bad(fmt.Sprintf("want a repository path of at most %d bytes (Docker's image reference grammar), not %d", maxRepository, len(n[1])))
	}
	if m[3] != "" && !imageDigest.MatchString(m[3]) {
		return bad("want a digest sha256: and 64, or sha512: and 128, lower-case hex digits (the OCI image spec's registered algorithms)")
	}
	return nil
}
