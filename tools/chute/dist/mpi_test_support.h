#pragma once
// Shared by the MPI tests (chute_mpi_tests, run under mpirun -np 2 and -np 3): the world
// communicator that mpi_main_test.cc creates before the tests and destroys after them.
//
// Every rank runs every test in the same order. A test must call the same collectives on every
// rank, so checks use EXPECT_* (never an early ASSERT_* return) before its last collective.

#include "chute/dist/mpi_comm.h"

namespace chute::dist::testing {

/// The world communicator; valid for the whole test run.
MpiComm& world();

}  // namespace chute::dist::testing
