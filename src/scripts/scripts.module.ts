import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import { ScriptsController } from './scripts.controller';
import { ScriptsRepository } from './scripts.repository';
import { ScriptsService } from './scripts.service';

@Module({
  imports: [ProductsModule],
  controllers: [ScriptsController],
  providers: [ScriptsService, ScriptsRepository],
  exports: [ScriptsService],
})
export class ScriptsModule {}
