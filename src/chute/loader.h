#pragma once
// Everything a C++ user of the Loader needs; see chute/pipeline/loader.h for a usage example.

#include "chute/dataset/anemoi_dataset.h"
#include "chute/dataset/crop_dataset.h"
#include "chute/dataset/cube_symmetry.h"
#include "chute/dataset/dataset.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/dataset/window_dataset.h"
#include "chute/pipeline/batch.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/transforms.h"
#include "chute/sampler/sampler.h"
