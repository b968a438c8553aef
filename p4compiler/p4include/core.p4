/*
 * core.p4 -- the P4-16 core library as the innet-drl software switch provides it.
 *
 * Written for this project; the declarations match the standard core.p4 shipped with p4c
 * name for name and signature for signature, so programs written against p4c compile here
 * unchanged.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors every target knows; a program may add its own with another error declaration. */
error {
    NoError,               /* nothing went wrong */
    PacketTooShort,        /* extract or advance ran past the end of the packet */
    NoMatch,               /* a select expression had no matching case */
    StackOutOfBounds,      /* a header stack was indexed outside its size */
    HeaderTooShort,        /* a varbit extract asked for more bits than the field holds */
    ParserTimeout,         /* the parser took too long */
    ParserInvalidArgument  /* a parser operation got an argument it cannot use */
}

/* The packet being parsed; only parsers see it. */
extern packet_in {
    /* Copy the next bits of the packet into a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Same, for a header with exactly one varbit field of the given run-time size. */
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /* Peek at the next bits without moving the cursor. */
    T lookahead<T>();
    /* Move the cursor forward without copying anything. */
    void advance(in bit<32> sizeInBits);
    /* Whole packet length in bytes. */
    bit<32> length();
}

/* The packet being rebuilt; only deparsers see it. */
extern packet_out {
    /* Append a header (skipped when invalid), or every member of a struct/stack in order. */
    void emit<T>(in T hdr);
}

/* Parser check: when check is false the parser stops with toSignal as its error. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; the default of tables that name no default. */
@noWarn("unused")
action NoAction() {}

/* Match kinds of the core library; architectures add more. */
match_kind {
    exact,    /* equal to the key */
    ternary,  /* equal under a mask */
    lpm       /* longest matching prefix */
}

/* Compile-time check; stops compilation with the message when check is false. */
extern bool static_assert(bool check, string message);
/* Same, with a message of the compiler's choosing. */
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
