"""For --instrumenter-file, as the Score-P bindings' tests write one: run before the program, it wraps the
functions of a module of the program in user regions."""
import scorep.user

import scorep_helper

scorep_helper.bar = scorep.user.region()(scorep_helper.bar)
scorep_helper.baz = scorep.user.region("baz")(scorep_helper.baz)
