// This file lists the teehistorian magic and the UUIDs of the known EX
// (extension) items, as computed by DDNet's CalculateUuid.

package teehistorian

import "github.com/google/uuid"

// Magic is the 16-byte UUID every teehistorian file starts with
// (699db17b-8efb-34ff-b1d8-da6f60c15dd1, "teehistorian@ddnet.tw").
var Magic = [16]byte{0x69, 0x9d, 0xb1, 0x7b, 0x8e, 0xfb, 0x34, 0xff, 0xb1, 0xd8, 0xda, 0x6f, 0x60, 0xc1, 0x5d, 0xd1}

// ExKind names a known EX item; ExUnknown for any other UUID.
type ExKind uint8

// Known EX item kinds (teehistorian_ex_chunks.h).
const (
	ExUnknown ExKind = iota
	ExTest
	ExDDNetVersionOld
	ExDDNetVersion
	ExAuthInit
	ExAuthLogin
	ExAuthLogout
	ExJoinVer6
	ExJoinVer7
	ExPlayerSwap
	ExSaveSuccess
	ExSaveFailure
	ExLoadSuccess
	ExLoadFailure
	ExPlayerTeam
	ExTeamPractice
	ExPlayerReady
	ExPlayerRejoin
	ExAntibot
	ExPlayerName
	ExPlayerFinish
	ExTeamFinish
	ExAuthInitRole // open DDNet PR #10964, not in a release
	numExKinds
)

// exInfo is one row of the EX table.
type exInfo struct {
	name string // short name used in frames ("player_name")
	id   string // UUID name string
	uuid uuid.UUID
}

// exTable is indexed by ExKind. It is read-only.
var exTable = [numExKinds]exInfo{
	ExUnknown:         {"unknown", "", uuid.Nil},
	ExTest:            {"test", "teehistorian-test@ddnet.tw", uuid.MustParse("6bb8ba88-0f0b-382e-8dae-dbf4052b8b7d")},
	ExDDNetVersionOld: {"ddnetver_old", "teehistorian-ddnetver-old@ddnet.tw", uuid.MustParse("41b49541-f26f-325d-8715-9baf4b544ef9")},
	ExDDNetVersion:    {"ddnetver", "teehistorian-ddnetver@ddnet.tw", uuid.MustParse("1397b63e-ee4e-3919-b86a-b058887fcaf5")},
	ExAuthInit:        {"auth_init", "teehistorian-auth-init@ddnet.tw", uuid.MustParse("60daba5c-52c4-3aeb-b8ba-b2953fb55a17")},
	ExAuthLogin:       {"auth_login", "teehistorian-auth-login@ddnet.tw", uuid.MustParse("37ecd3b8-9218-3bb9-a71b-a935b86f6a81")},
	ExAuthLogout:      {"auth_logout", "teehistorian-auth-logout@ddnet.tw", uuid.MustParse("d4f5abe8-edd2-3fb9-abd8-1c8bb84f4a63")},
	ExJoinVer6:        {"joinver6", "teehistorian-joinver6@ddnet.tw", uuid.MustParse("1899a382-71e3-36da-937d-c9de6bb95b1d")},
	ExJoinVer7:        {"joinver7", "teehistorian-joinver7@ddnet.tw", uuid.MustParse("59239b05-0540-318d-bea4-9aa1e80e7d2b")},
	ExPlayerSwap:      {"player_swap", "teehistorian-player-swap@ddnet.tw", uuid.MustParse("5de9b633-49cf-3e99-9a25-d4a78e9717d7")},
	ExSaveSuccess:     {"save_success", "teehistorian-save-success@ddnet.tw", uuid.MustParse("4560c756-da29-3036-81d4-90a50f0182cd")},
	ExSaveFailure:     {"save_failure", "teehistorian-save-failure@ddnet.tw", uuid.MustParse("b29901d5-1244-3bd0-bbde-23d04b1f7ba9")},
	ExLoadSuccess:     {"load_success", "teehistorian-load-success@ddnet.tw", uuid.MustParse("e05408d3-a313-33df-9eb3-ddb990ab954a")},
	ExLoadFailure:     {"load_failure", "teehistorian-load-failure@ddnet.tw", uuid.MustParse("ef8905a2-c695-3591-a1cd-53d2015992dd")},
	ExPlayerTeam:      {"player_team", "teehistorian-player-team@ddnet.tw", uuid.MustParse("a111c04e-1ea8-38e0-90b1-d7f993ca0da9")},
	ExTeamPractice:    {"team_practice", "teehistorian-team-practice@ddnet.tw", uuid.MustParse("5792834e-81d1-34c9-a29b-b5ff25dac3bc")},
	ExPlayerReady:     {"player_ready", "teehistorian-player-ready@ddnet.tw", uuid.MustParse("638587c9-3f75-3887-918e-a3c2614ffaa0")},
	ExPlayerRejoin:    {"player_rejoin", "teehistorian-rejoinver6@ddnet.org", uuid.MustParse("c1e921d5-96f5-37bb-8a45-7a06f163d27e")},
	ExAntibot:         {"antibot", "teehistorian-antibot@ddnet.org", uuid.MustParse("866bfdac-fb49-3c0b-a887-5fe1f3ea00b8")},
	ExPlayerName:      {"player_name", "teehistorian-player-name@ddnet.org", uuid.MustParse("d016f9b9-4151-3b87-87e5-3a6087eb5f26")},
	ExPlayerFinish:    {"player_finish", "teehistorian-player-finish@ddnet.org", uuid.MustParse("68943c01-2348-3e01-9490-3f27f8269d94")},
	ExTeamFinish:      {"team_finish", "teehistorian-team-finish@ddnet.org", uuid.MustParse("9588b9af-3fdc-3760-8043-82deeee317a5")},
	ExAuthInitRole:    {"auth_init_role", "teehistorian-auth-init-role@ddnet.tw", uuid.MustParse("463bb09f-ee44-3911-a899-fd05e733e198")},
}

// String returns the kind's short name ("player_name", "unknown", ...).
func (k ExKind) String() string {
	if k < numExKinds {
		return exTable[k].name
	}
	return "unknown"
}

// UUID returns the kind's UUID (uuid.Nil for ExUnknown).
func (k ExKind) UUID() uuid.UUID {
	if k < numExKinds {
		return exTable[k].uuid
	}
	return uuid.Nil
}

// ExUUIDNames returns the UUID name strings of the known EX kinds
// ("teehistorian-test@ddnet.tw", ...) in ExKind order: the list a DDNet
// server writes in its header's "uuids" field, for writers of DDNet-style
// headers.
func ExUUIDNames() []string {
	names := make([]string, 0, numExKinds-1)
	for k := ExKind(1); k < numExKinds; k++ {
		names = append(names, exTable[k].id)
	}
	return names
}

// exKindOf looks up the kind of an EX UUID. It does not allocate.
func exKindOf(id [16]byte) ExKind {
	for k := ExKind(1); k < numExKinds; k++ {
		if exTable[k].uuid == id {
			return k
		}
	}
	return ExUnknown
}
