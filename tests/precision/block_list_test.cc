// The block lists as convert's flags and serve's config parameters give them.
#include "precision/block_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "precision/convert.h"

namespace ortgpu::precision {
namespace {

using ::testing::ElementsAre;

TEST(BlockListTest, DefaultExpandsNoneAddsNothingAndWordsAreSplitAndTrimmed) {
  EXPECT_EQ(ParseOpBlockList({"default"}), DefaultOpBlockList());
  EXPECT_TRUE(ParseOpBlockList({"none"}).empty());
  EXPECT_TRUE(ParseOpBlockList({}).empty());
  // A config parameter is one string; flags come split already.
  EXPECT_THAT(ParseOpBlockList({" Softmax, LayerNormalization ,,none"}), ElementsAre("Softmax", "LayerNormalization"));
  EXPECT_THAT(ParseOpBlockList({"Softmax", "Softmax,TopK"}), ElementsAre("Softmax", "TopK"));
  const auto with_default = ParseOpBlockList({"Softmax,default"});
  ASSERT_EQ(with_default.size(), DefaultOpBlockList().size() + 1);
  EXPECT_EQ(with_default.front(), "Softmax");
}

TEST(BlockListTest, NodesCarryTheReasonTheyWereKept) {
  const auto nodes = ParseNodeBlockList({"attn/softmax, head"}, "named in precision_node_block_list");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes.at("attn/softmax"), "named in precision_node_block_list");
  EXPECT_EQ(nodes.at("head"), "named in precision_node_block_list");
  EXPECT_TRUE(ParseNodeBlockList({""}, "x").empty());
}

}  // namespace
}  // namespace ortgpu::precision
